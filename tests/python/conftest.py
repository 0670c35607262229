"""One Spark session per test worker; each test gets its own schema.

Static Spark settings (jars, catalog, warehouse) are fixed when the JVM
starts, so isolation is by schema: every test that builds tables passes a
fresh schema prefix to dbt.

scripts/test.sh runs one process; LAKEHOUSE_TEST_WORKERS=N runs N
pytest-xdist workers (each its own JVM and its own LAKEHOUSE_HOME, so each its
own Derby metastore). Then tests that share an expensive fixture run on one
worker: those of the built warehouse (`warehouse_run`) as one group, and each
module with a module-scoped fixture as another. Either way the longest work
comes first (`LONGEST_FIRST`).

Tests whose work is child processes with their own JVMs (the crash, erasure,
run-command and cluster tests: `@pytest.mark.background(work=...)`) run that work in one
thread beside the in-process tests, from the session's start, longest first:
the in-process tests leave about a quarter of the two cores idle, and a cold
child JVM uses a little over one; the children run at a lower priority
(`nice`), so that they take what the in-process tests leave idle rather than
slow them down. Each such test waits for its work's outcome
at the end of the session and fails as the work did. Under xdist the work runs
inside its test, as any other.

Some in-process modules (`pytestmark = pytest.mark.child_session`) run, in
a whole-suite run, as one more piece of that background work: one child pytest
session (its own JVM, metastore and warehouse) runs them all, and
each of their tests here waits for its outcome. The in-process tests are the
longer path and the background thread had minutes to spare (2026-12-07: done
at +26 min of 36).

dbt parses the whole project whenever a test's schema or vars differ from the
last parse (most tests' first invocation): the session reuses the macros of
an earlier parse of the same files instead of parsing them again
(`_dbt_macro_cache.py`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import _dbt_macro_cache
import pytest
from lakehouse_cdc import PROJECT_ROOT

_dbt_macro_cache.install()

#: work handed out first, longest first (seconds in CI, 2026-11-24): the
#: crash test (960-1160, cold child JVMs), the warehouse group (about 430 to
#: build, then its tests), erasure (about 520), then the cluster, Debezium and
#: silver fixtures. Other tests follow in file order. In one process the
#: background work (crash, erasure, cluster, run command) starts in this order too.
LONGEST_FIRST = ["test_silver_crash.py", "warehouse", "test_erase.py", "test_cluster.py",
                 "test_silver_debezium.py", "test_silver_cdc.py", "test_bad_input.py",
                 "test_run_command.py", "test_maintain.py"]


def _work_group(item: pytest.Item) -> str | None:
    """The group an item must share a worker with, if any."""
    if "warehouse_run" in item.fixturenames:
        return "warehouse"
    defs = item._fixtureinfo.name2fixturedefs
    if any(d[-1].scope == "module" for name in item.fixturenames if (d := defs.get(name))):
        return item.path.name
    return None


def _rank(item: pytest.Item) -> int:
    for label in (_work_group(item), item.path.name):
        if label in LONGEST_FIRST:
            return LONGEST_FIRST.index(label)
    return len(LONGEST_FIRST)


def _in_background(config: pytest.Config) -> bool:
    """Background work runs beside the in-process tests, except under xdist
    (on its controller, and on a worker, which xdist tells by `workerinput`)."""
    if hasattr(config, "workerinput"):
        return False
    return not (config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("background"):
            assert "background" in item.fixturenames, f"{item.nodeid} waits for no work"
    if not _in_background(config):
        for item in items:
            group = _work_group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
        items.sort(key=_rank)  # stable: file order within a rank
        return
    children = _child_session_items(config, items)
    for item in children:
        _wait_for_child_session(item)
    # the tests that wait for background work come last
    items.sort(key=lambda item: (item.get_closest_marker("background") is not None
                                 or item in children, _rank(item)))


#: set in a child session's environment: its tests run in it, in-process
CHILD_SESSION_ENV = "LAKEHOUSE_TEST_CHILD_SESSION"


def _child_session_items(config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
    """The tests marked `child_session` that run in a child session: those
    of a session with background work that selects in-process tests of other
    modules too (run on their own, they run here)."""
    if os.environ.get(CHILD_SESSION_ENV) or not _in_background(config):
        return []
    marked = [i for i in items
              if i.get_closest_marker("child_session") and not i.get_closest_marker("skip")]
    others = [i for i in items if i not in marked and not i.get_closest_marker("background")]
    return marked if others else []


def _wait_for_child_session(item: pytest.Item) -> None:
    """Make `item` wait for the outcome of the child session that runs its
    module, instead of running here: no fixture but the background thread's."""
    item.fixturenames = ["_background_runner"]  # type: ignore[attr-defined]

    def runtest() -> None:
        future, context = item.config.stash[_BACKGROUND].jobs[CHILD_SESSION_JOB]
        future.result()
        outcome = context.outcomes.get(item.nodeid)
        print("\n".join(context.notes))
        if outcome == "skipped":
            pytest.skip("skipped in its child session (its output above)")
        assert outcome == "passed", (f"{item.nodeid}: {outcome or 'not run'} in its child "
                                     f"session:\n" + "\n".join(context.notes)[-6000:])

    item.runtest = runtest  # type: ignore[method-assign]
    item.stash[_CHILD_SESSION] = True


_CHILD_SESSION = pytest.StashKey[bool]()
#: the background job of the child session: one for all such modules, one JVM
#: to start and warm
CHILD_SESSION_JOB = "child session"


def _child_session_work(nodeids: list[str]) -> Callable[[BackgroundWork], None]:
    """Background work: pytest on `nodeids` in a child process; each test's
    outcome recorded in the work's `outcomes`, its output kept in its notes."""
    def work(context: BackgroundWork) -> None:
        report = context.tmp_path / "outcomes.txt"
        env = {**context.env, CHILD_SESSION_ENV: "1"}
        env.pop("LAKEHOUSE_HOME", None)  # the child session makes its own
        done = context.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "no:xdist", "--basetemp", str(context.tmp_path / "pytest"),
                            "-o", "addopts=--strict-markers", f"--lakehouse-outcomes={report}",
                            *nodeids], timeout=3600, cwd=PROJECT_ROOT, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines = done.stdout.splitlines()
        context.note("\n".join(lines[-300:]))
        if report.exists():
            for line in report.read_text().splitlines():
                nodeid, _, outcome = line.rpartition(" ")
                context.outcomes[nodeid] = outcome
        if done.returncode not in (0, 1):
            raise RuntimeError(f"the child session ({len(nodeids)} tests) ended with exit code "
                               f"{done.returncode}:\n" + "\n".join(lines[-60:]))
    return work


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lakehouse-outcomes", default=None,
                     help="write each test's outcome to this file (a child session's report)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = _OUTCOMES.get("path")
    if path and (report.when == "call" or report.outcome != "passed"):
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{report.nodeid} {report.outcome}\n")


_OUTCOMES: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--lakehouse-outcomes")
    if path:
        _OUTCOMES["path"] = path


#: the niceness of the background work's children (and of the servers they
#: start): when both want the two cores the in-process tests get them, and the
#: children use what the tests leave idle. (The in-process tests were the
#: longer path: pytest 2943 s, the background done at +2218 s. At niceness 10,
#: 2592 s and +2556 s, on a faster hour; docs/ci.md)
BACKGROUND_NICENESS = 10


@dataclass
class BackgroundWork:
    """What a test's background work is given, in place of fixtures: the
    session's simulations and child JVM options, a folder of its own, and the
    environment as it was when the session began (a test in the main thread may
    change os.environ meanwhile; the work's children must not see that). Its
    children are started through `popen` or `run`, so that a session that ends
    early kills them instead of waiting."""

    simulated: Callable[..., Path]
    child_java_options: Callable[..., str]
    tmp_path: Path
    env: dict[str, str] = field(repr=False)
    cancelled: threading.Event
    notes: list[str] = field(default_factory=list)
    #: a child session's test outcomes, by node id
    outcomes: dict[str, str] = field(default_factory=dict)
    children: list[subprocess.Popen] = field(default_factory=list, repr=False)

    def popen(self, args: list[str], **options) -> subprocess.Popen:
        if self.cancelled.is_set():
            raise RuntimeError("background work stopped: the test session ended")
        child = subprocess.Popen(["nice", "-n", str(BACKGROUND_NICENESS), *args], **options)
        self.children.append(child)
        return child

    def run(self, args: list[str], timeout: float, **options) -> subprocess.CompletedProcess:
        """subprocess.run, through `popen`."""
        with self.popen(args, **options) as child:
            try:
                out, err = child.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                raise
        return subprocess.CompletedProcess(args, child.returncode, out, err)

    def note(self, text: str) -> None:
        """A line the waiting test prints (the work's own prints would land
        in whichever test is running at the time)."""
        self.notes.append(text)


class _Background:
    """One thread running the background work of the session's tests in turn."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="background")
        self.cancelled = threading.Event()
        self.started = time.monotonic()
        self.jobs: dict[str, tuple[Future, BackgroundWork]] = {}
        self.times: dict[str, tuple[float, float]] = {}

    def submit(self, nodeid: str, work: Callable[[BackgroundWork], None],
               context: BackgroundWork) -> None:
        def timed() -> None:
            begun = time.monotonic()
            try:
                work(context)
            finally:
                self.times[nodeid] = (begun - self.started, time.monotonic() - begun)

        self.jobs[nodeid] = (self.pool.submit(timed), context)

    def stop(self) -> None:
        """At the session's end: work not begun is dropped, children still
        running (a session stopped early) are killed."""
        self.cancelled.set()
        for _, context in self.jobs.values():
            for child in context.children:
                if child.poll() is None:
                    child.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)


def _background_work(item: pytest.Item) -> Callable[[BackgroundWork], None]:
    marker = item.get_closest_marker("background")
    assert marker and "work" in marker.kwargs, f"{item.nodeid}: mark.background(work=...)"
    return marker.kwargs["work"]


@pytest.fixture(scope="session", autouse=True)
def _background_runner(request: pytest.FixtureRequest, lakehouse_home: Path,
                       tmp_path_factory: pytest.TempPathFactory):
    """The session's background thread, started with the first test (autouse)
    with the work of every selected test marked `background`."""
    runner = _Background()
    if _in_background(request.config):
        simulated = request.getfixturevalue("simulated")
        java_options = request.getfixturevalue("child_java_options")
        env = dict(os.environ)
        waiting = [i for i in request.session.items
                   if i.get_closest_marker("background") and not i.get_closest_marker("skip")]
        for item in sorted(waiting, key=_rank):
            name = re.sub(r"[^a-z0-9]+", "_", item.name.lower())[:30]
            folder = tmp_path_factory.mktemp(name)
            runner.submit(item.nodeid, _background_work(item), BackgroundWork(
                simulated, java_options, folder,
                {**env, "DBT_TARGET_PATH": str(folder / "dbt-target")}, runner.cancelled))
        nodeids = [i.nodeid for i in request.session.items if i.stash.get(_CHILD_SESSION, False)]
        if nodeids:
            runner.submit(CHILD_SESSION_JOB, _child_session_work(nodeids), BackgroundWork(
                simulated, java_options, tmp_path_factory.mktemp("child_session"), dict(env),
                runner.cancelled))
    request.config.stash[_BACKGROUND] = runner
    yield runner
    runner.stop()


_BACKGROUND = pytest.StashKey[_Background]()


@pytest.fixture
def background(request: pytest.FixtureRequest, _background_runner: _Background, simulated,
               child_java_options, tmp_path: Path):
    """Call it to get the outcome of this test's background work: waits for
    it (or, under xdist, runs it now), prints its notes, and fails as it did.
    A test that never calls it fails."""
    called = []

    def outcome() -> None:
        called.append(True)
        job = _background_runner.jobs.get(request.node.nodeid)
        if job is None:  # xdist: the work runs here
            context = BackgroundWork(simulated, child_java_options, tmp_path, dict(os.environ),
                                     _background_runner.cancelled)
            try:
                _background_work(request.node)(context)
            finally:
                print("\n".join(context.notes))
            return
        future, context = job
        try:
            future.result()
        finally:
            print("\n".join(context.notes))

    yield outcome
    assert called, f"{request.node.nodeid} never waited for its background work"


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    runner = config.stash.get(_BACKGROUND, None)
    if runner and runner.times:
        terminalreporter.section("background work (beside the in-process tests)")
        for nodeid, (began, took) in runner.times.items():
            terminalreporter.write_line(f"{took:8.1f}s  from +{began:.0f}s  {nodeid}")


@pytest.fixture(scope="session")
def lakehouse_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("lakehouse")
    os.environ["LAKEHOUSE_HOME"] = str(home)
    os.environ.setdefault("DBT_PROFILES_DIR", str(PROJECT_ROOT / "profiles"))
    os.environ["DO_NOT_TRACK"] = "1"
    # keep shuffles small: test data is tiny
    os.environ["LAKEHOUSE_SHUFFLE_PARTITIONS"] = "2"
    # the suite's JVM with the serial collector (the children's already use
    # it): G1's concurrent threads compete for the two cores. Two tests of
    # test_bad_input.py, alternated, twice each (2026-12-03): 156.7 and
    # 159.9 s against 168.5 and 163.4 s with G1
    os.environ.setdefault("LAKEHOUSE_JAVA_OPTIONS", "-XX:+UseSerialGC")
    return home


@pytest.fixture(scope="session", autouse=True)
def _dbt_interpreted() -> Iterator[None]:
    """The suite's dbt invocations run Spark interpreted (`INTERPRETED`, as
    the crash and erasure children build): on the tests' tables of tens to
    thousands of rows, compiling generated code costs more than it saves.
    Three whole-project builds of the warehouse scenario, alternated with
    generated code in one warm JVM (2026-12-03 21:45, after a warm-up
    build): 158.5 s against 177.4 s, each batch faster (43.8/46.9,
    59.7/72.4, 55.0/58.1 s). Only inside an invocation: interpreted, Spark
    3.5 cannot make the rows of its catalog API (`spark.catalog.tableExists`,
    `listTables`), which tests and the product's Python call between
    invocations. The benchmark, the run-command, cluster and follow tests'
    children and users keep generated code."""
    from cdc_helpers import interpreted
    from dbt.cli.main import dbtRunner
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    invoke = dbtRunner.invoke

    def invoke_interpreted(self, args, **kwargs):
        if SparkContext._active_spark_context is None:  # dbt starts Spark itself
            return invoke(self, args, **kwargs)
        with interpreted(SparkSession.builder.getOrCreate()):
            return invoke(self, args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dbtRunner, "invoke", invoke_interpreted)
        yield


@pytest.fixture(scope="module", autouse=True)
def _dbt_target_per_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """dbt's target folder, one per test module (and one per background
    work), unless a call names its own: dbt parses the whole project again,
    2.5-3.5 s, when the schema, vars or project differ from the last parse
    recorded in the target folder. In the project's shared `target/`, a child
    process of the background work (the erasure and run-command tests) could
    record its parse between two builds of a module's batches; and two
    processes wrote the same `partial_parse.msgpack`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DBT_TARGET_PATH", str(tmp_path_factory.mktemp("dbt-target")))
        yield


@pytest.fixture(scope="session")
def spark(lakehouse_home: Path):
    from lakehouse_cdc.spark import get_spark

    session = get_spark()
    yield session
    session.stop()


@pytest.fixture
def schema(request: pytest.FixtureRequest) -> str:
    """A schema prefix unique to this test (dbt adds _bronze, _silver, ...)."""
    name = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:30].strip("_")
    return f"t_{name}_{uuid.uuid4().hex[:6]}"


@pytest.fixture
def fixture_project(tmp_path: Path):
    """Copy a project from tests/fixtures/<name> into tmp (macros stay shared)."""

    def copy(name: str) -> Path:
        src = PROJECT_ROOT / "tests" / "fixtures" / name
        dst = tmp_path / name
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("target", "logs"))
        text = (dst / "dbt_project.yml").read_text()
        text = text.replace("../../../macros", str(PROJECT_ROOT / "macros"))
        (dst / "dbt_project.yml").write_text(text)
        return dst

    return copy


@pytest.fixture
def project_copy(tmp_path: Path):
    """A copy of the dbt project in tmp, for tests that edit YAML or SQL:
    the whole project, or (`models=False`) its macros without its models,
    for a test that brings its own."""

    def copy(models: bool = True) -> Path:
        from lakehouse_cdc import copy_project

        return copy_project(tmp_path / "project", models=models)

    return copy


@pytest.fixture(scope="session")
def child_java_options(tmp_path_factory: pytest.TempPathFactory):
    """LAKEHOUSE_JAVA_OPTIONS for the tests that run the project in child
    processes (crash, erasure, run command): each child's JVM is cold and
    short-lived, so the client compiler alone (no C2 threads competing for two
    cores) and the serial collector, and the classes a first child loaded read
    from its class-data archive (AppCDS) instead of from the jars: together
    about a quarter off a crash-test child, measured. Only a child that exits
    normally and is waited for may write the archive (`write_archive`); a JVM
    that cannot use it runs without it."""
    archive = tmp_path_factory.mktemp("cds") / "classes.jsa"

    def options(write_archive: bool = False) -> str:
        base = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        if archive.exists():
            return f"{base} -XX:SharedArchiveFile={archive}"
        return f"{base} -XX:ArchiveClassesAtExit={archive}" if write_archive else base

    return options


@pytest.fixture(scope="session")
def simulated(tmp_path_factory: pytest.TempPathFactory):
    """Simulate once per distinct set of knobs for the whole session."""
    from lakehouse_cdc.simulator import SimulationConfig, simulate

    made: dict[tuple, Path] = {}
    lock = threading.Lock()  # the background thread simulates too

    def make(**knobs) -> Path:
        key = tuple(sorted(knobs.items()))
        with lock:
            if key not in made:
                out = tmp_path_factory.mktemp("sim")
                simulate(SimulationConfig(out=out, **knobs), overwrite=True)
                made[key] = out
            return made[key]

    return make


#: the knobs of the end-to-end run shared by the dimension and gold tests
#: (two batches: each costs a whole-project build, 70-150 s; with 80 changes
#: each they still hold a key changed twice in one batch, late changes, keys
#: of both dimensions with four versions and order lines priced by an older
#: product version, which the tests assert)
WAREHOUSE_KNOBS = {"seed": 21, "scale": 50, "batches": 2, "changes_per_batch": 80,
                   "multi_change_rate": 0.4, "tie_rate": 0.1, "late_rate": 0.15,
                   "redeliver_rate": 0.05, "malformed_rate": 0.02, "add_column_at_batch": 0}
WAREHOUSE_TABLES = {
    "dimensions": ["dim_customer", "dim_product"],
    "snapshots": ["snp_customer", "snp_product"],
    "gold": ["fct_orders", "fct_order_items", "mart_daily_revenue_by_country",
             "mart_customer_lifetime_value", "mart_product_performance"],
}


@pytest.fixture(scope="session")
def warehouse_run(spark, simulated, tmp_path_factory):
    """Land the batches one by one and `dbt build` the whole project after each
    (models and snapshots; the dbt data tests in the last build, where a
    failing one fails here; the dbt unit tests in the first); keep every
    dimension, snapshot and gold table as it was after each batch, and the
    statements each build ran for the dimensions (`DIMENSION_STATEMENTS`:
    their recomputed rows' view and their MERGE)."""
    from cdc_helpers import Scenario

    sim = simulated(**WAREHOUSE_KNOBS)
    base = tmp_path_factory.mktemp("warehouse")
    # build_snapshots: the snapshot kind's snapshots too, to compare both kinds
    # (artifacts: slim CI defers to this build's manifest)
    scenario = Scenario(sim, base / "landing", "t_wh", vars={"build_snapshots": True},
                        target_path=base / "target", artifacts=True)
    captures = []
    for batch in range(WAREHOUSE_KNOBS["batches"] + 1):
        scenario.land(batch)
        # (each batch's tables are compared with the truth by the tests)
        with _dimension_statements() as statements:
            scenario.build("fqn:*", unit_tests=batch == 0,
                           data_tests=batch == WAREHOUSE_KNOBS["batches"])
        captures.append({
            name: [row.asDict() for row in spark.table(f"t_wh_{layer}.{name}").collect()]
            for layer, names in WAREHOUSE_TABLES.items() for name in names
        })
        captures[-1][DIMENSION_STATEMENTS] = statements
    return scenario, captures


#: the key of a warehouse capture that holds, per dimension, the statements
#: its build ran that begin as these do (dbt's comment removed)
DIMENSION_STATEMENTS = "_dimension_statements"
_RECORDED = re.compile(r"^\s*(merge into|create or replace temporary view \w+__dbt_tmp )", re.I)


@contextmanager
def _dimension_statements() -> Iterator[dict[str, list[str]]]:
    """While open, the SQL of every statement dbt-spark runs for a model of
    WAREHOUSE_TABLES' dimensions that `_RECORDED` matches, by model name."""
    from dbt.adapters.spark import session as spark_session

    recorded: dict[str, list[str]] = {}
    execute = spark_session.Cursor.execute
    nodes = {f'"node_id": "model.lakehouse_cdc.{name}"': name
             for name in WAREHOUSE_TABLES["dimensions"]}

    def recording(cursor, sql, *args, **kwargs):
        name = next((name for node, name in nodes.items() if node in sql), None)
        body = re.sub(r"/\*.*?\*/", " ", sql, count=1, flags=re.S)
        if name and _RECORDED.match(body):
            recorded.setdefault(name, []).append(body)
        return execute(cursor, sql, *args, **kwargs)

    spark_session.Cursor.execute = recording
    try:
        yield recorded
    finally:
        spark_session.Cursor.execute = execute


@contextmanager
def running_cluster(work: BackgroundWork) -> Iterator[dict[str, str]]:
    """`lakehouse cluster up` for a cluster test's background work, on free
    loopback ports (PostgreSQL catalog, Spark master + one small worker,
    Thrift server), `down` when the work ends. Yields the environment that
    points the `cluster` target at it."""
    import sys
    import tempfile

    from cdc_helpers import free_port
    from lakehouse_cdc.cluster import PORTS

    # PostgreSQL runs as user postgres: its folder's parents must be traversable
    home = Path(tempfile.mkdtemp(prefix="lakehouse-cluster-", dir="/var/tmp"))
    home.chmod(0o711)
    env = {**work.env, "LAKEHOUSE_CLUSTER_HOME": str(home), "DO_NOT_TRACK": "1",
           "DBT_TARGET": "cluster", "LAKEHOUSE_WORKER_CORES": "1",
           "LAKEHOUSE_WORKER_MEMORY": "2g", "LAKEHOUSE_SHUFFLE_PARTITIONS": "2"}
    env.setdefault("DBT_PROFILES_DIR", str(PROJECT_ROOT / "profiles"))
    ports: set[int] = set()
    while len(ports) < len(PORTS):
        ports.add(free_port())
    names = [var for var, _ in PORTS.values()]
    env.update({var: str(port) for var, port in zip(names, ports, strict=True)})
    command = [sys.executable, "-m", "lakehouse_cdc.cli", "cluster"]
    captured = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    try:
        up = work.run([*command, "up"], timeout=400, env=env, **captured)
        logs = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}"
                         for p in sorted((home / "logs").glob("*.log")))
        assert up.returncode == 0, f"cluster up failed:\n{up.stdout}\n{up.stderr}\n{logs}"
        yield env
    finally:
        # (not through `work`: the daemons are stopped even when the session ends)
        try:
            subprocess.run([*command, "down"], env=env, capture_output=True, timeout=120)
        except subprocess.TimeoutExpired:  # the work's own failure, if any, is the one to see
            work.note(f"cluster down did not finish in 120 s: {home}")
        shutil.rmtree(home, ignore_errors=True)
