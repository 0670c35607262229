"""`lakehouse follow`: apply each change file as it lands, from one warm process.

    lakehouse follow [--schema lakehouse] [--select SELECTION] [--downstream incremental]
                     [--interval 0.5] [--settle 1.0] [--until-idle SECONDS]
                     [--maintain-every MINUTES]

One Spark session and one parse of the project for as long as it runs. It
watches the landing folders of the bronze sources the CDC models read (their
locations and file patterns as the models see them: the `bronze_locations`
macro) and, when a data file lands, runs in this process `dbt run` of the CDC
models reading that source and of the incremental models downstream of them
whose other inputs are built (the SCD2 histories, incremental gold). They are
the models and macros `dbt build` runs, so a file is applied exactly as a
build would apply it. Per file it prints the time
from landing (the file's modification time) to the change visible in silver
and in the SCD2 history, and the rows applied and quarantined.

It keeps no state of its own: what is applied is what each model's file log
(`cdc_file_log`) says. It starts with one run of every model it follows,
which applies what landed while it was stopped, so after a stop at any point
(Ctrl-C, `kill -9`, a crash) starting it again resumes where it stopped. A
failed run stops it with dbt's error (exit 1): nothing is skipped. Edits to
the project (models, macros, YAML) are picked up at the next file.

On the embedded default the warehouse's Derby metastore admits one process:
while `follow` runs, other commands on the same $LAKEHOUSE_HOME fail to start
(stop it first). Files written in place (not renamed into the folder whole,
as S3 puts are) are taken once unchanged for --settle seconds; a CSV or JSON
lines file read while still being written is held back by the models (its
last line incomplete) and read again once it changes. A gzip file in a local
folder modified in the last 10 minutes is opened to its end first: while it
ends before its end-of-stream marker (or is unsettled), its source's models
are not run (their run would read it, and Spark's reader fails on it, often
naming no file), nor the first run, which runs every model; the follower
says which file it waits for.

With --maintain-every, the tables its runs wrote (the models, their
`<model>__cdc_*` state tables, the schema's `cdc_*` logs) get the table
maintenance of `lakehouse maintain` (the same macro and policy) when the
folders are idle and that many minutes have passed since the last time: on
the embedded default no other process can maintain them while it runs.
Files landing during the maintenance wait for its end; a failed maintenance
is reported and tried again after the same interval (one that is done but
cannot release the build lock afterwards is reported done, with the command
that releases it).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import signal
import statistics
import time
import uuid
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lakehouse_cdc import PROJECT_ROOT

DOWNSTREAM = ("incremental", "all", "none")
#: gzip files modified longer ago than this are not opened to check that
#: they are whole (_gzip_cut)
GZIP_CHECK_SECONDS = 600
#: the project files whose change makes the runner parse the project again
PROJECT_FILES = ("models", "macros", "seeds", "snapshots", "dbt_project.yml")


def _say(message: str) -> None:
    print(f"[follow] {message}", flush=True)


@dataclass
class Source:
    """A bronze source table the followed models read, and where it lands."""

    unique_id: str
    location: str
    pattern: Any  # java.util.regex.Pattern: the same regex semantics as the models' rlike
    models: list[str] = field(default_factory=list)  # the CDC models reading it

    @property
    def name(self) -> str:
        return ".".join(self.unique_id.split(".")[-2:])


@dataclass(frozen=True)
class Applied:
    """One landed file, after the run that made it visible."""

    path: str
    landed: float  # epoch seconds: the file's modification time
    visible: float  # epoch seconds: the run's end (silver and SCD2 history committed)
    status: str
    rows: int | None
    quarantined: int

    @property
    def latency(self) -> float:
        return self.visible - self.landed


@dataclass
class FollowOptions:
    schema: str = "lakehouse"
    select: str = "config.incremental_strategy:cdc_merge"
    downstream: str = "incremental"
    build: bool = False
    interval: float = 0.5
    settle: float = 1.0
    until_idle: float | None = None
    maintain_every: float | None = None  # minutes; None: never
    vars: dict[str, Any] = field(default_factory=dict)
    project_dir: Path = PROJECT_ROOT
    target_path: Path | None = None
    verbose: bool = False


class Follower:
    """The watch-and-apply loop's state: the parsed project, the sources and
    the files seen. `cycle()` is one turn of the loop (the benchmark calls it
    directly)."""

    def __init__(self, spark: Any, options: FollowOptions) -> None:
        self.spark = spark
        self.options = options
        self.seen: dict[str, tuple[int, int]] = {}
        # gzip files opened: path -> ((modified ms, size), cut); sources waiting for cut ones
        self.gzip_checked: dict[str, tuple[tuple[int, int], bool]] = {}
        self.waiting: dict[str, list[str]] = {}
        self.catching_up = False  # the first run, put off while a gzip file is being copied
        self.unreleased: dict[str, Any] | None = None  # a maintenance's lock, not released
        self.applied: list[Applied] = []
        self.runs = 0
        self.unmaintained: set[str] = set()  # models run since the last maintenance
        self.maintained_at = time.time()
        self._load_project()

    # -- the project --------------------------------------------------------

    def _dbt(self, args: list[str], manifest: Any = None,
             vars: dict[str, Any] | None = None) -> Any:
        from lakehouse_cdc.dbt_runner import run_dbt

        lookup = args[0] in ("ls", "compile")  # they print their result, even when quiet
        with contextlib.redirect_stdout(io.StringIO()) if lookup else contextlib.nullcontext():
            return run_dbt(args, project_dir=self.options.project_dir,
                           schema=self.options.schema,
                           vars=self.options.vars if vars is None else vars,
                           target_path=self.options.target_path,
                           quiet=lookup or not self.options.verbose, manifest=manifest)

    def _project_stamp(self) -> float:
        stamp = 0.0
        for name in PROJECT_FILES:
            top = Path(self.options.project_dir) / name
            if top.is_file():
                stamp = max(stamp, top.stat().st_mtime)
            for folder, _, files in os.walk(top):
                for file in files:
                    stamp = max(stamp, os.stat(os.path.join(folder, file)).st_mtime)
        return stamp

    def _load_project(self) -> None:
        """Parse the project once (every run reuses the manifest) and find the
        followed models, their sources and the models downstream."""
        self.stamp = self._project_stamp()
        self.manifest = self._dbt(["parse"]).result
        listed = self._dbt(["ls", "--select", self.options.select, "--resource-type", "model",
                            "--output", "json", "--output-keys", "unique_id"],
                           manifest=self.manifest).result
        chosen = [json.loads(line)["unique_id"] for line in listed or []]
        nodes = self.manifest.nodes
        # (a change-log view inherits the silver folder's strategy: not a reader)
        self.models = [uid for uid in chosen
                       if nodes[uid].config.get("incremental_strategy") == "cdc_merge"
                       and nodes[uid].config.materialized == "incremental"]
        if not self.models:
            raise SystemExit(f"[follow] --select {self.options.select!r} selects no CDC model "
                             "(incremental_strategy cdc_merge): nothing to follow")
        compiled = self._dbt(["compile", "--inline", "{{ bronze_locations() }}"])
        locations = json.loads(compiled.result.results[0].node.compiled_code)
        regex = self.spark._jvm.java.util.regex.Pattern
        self.sources: dict[str, Source] = {}
        for uid in self.models:
            for parent in nodes[uid].depends_on.nodes:
                if parent in locations:
                    where = locations[parent]
                    source = self.sources.setdefault(parent, Source(
                        parent, where["location"], regex.compile(where["file_pattern"])))
                    source.models.append(uid)
        self.children: dict[str, list[str]] = defaultdict(list)
        for uid, node in nodes.items():
            for parent in getattr(node.depends_on, "nodes", []):  # a seed's names macros only
                self.children[parent].append(uid)

    def _selection(self, models: list[str], first: bool) -> list[str]:
        """The models to run for new files of `models`: them, then downstream
        per --downstream (on the first run, the views between them too, which
        a fresh warehouse does not have yet)."""
        wanted = {"incremental": ("incremental", "view") if first else ("incremental",),
                  "all": None, "none": ()}[self.options.downstream]
        chosen, todo = list(models), list(models)
        while todo:
            for child in self.children.get(todo.pop(), []):
                node = self.manifest.nodes[child]
                if child in chosen or node.resource_type != "model":
                    continue
                if (wanted is None or node.config.materialized in wanted) and (
                        wanted is None or self._runnable(node, chosen)):
                    chosen.append(child)
                    todo.append(child)
                elif node.config.materialized in ("view", "ephemeral"):
                    todo.append(child)  # an incremental model may read through it
        return [self.manifest.nodes[uid].name for uid in chosen]

    def _runnable(self, node, chosen: list[str]) -> bool:
        """Whether every model `node` reads is run before it or already built:
        an incremental model downstream (e.g. a gold fact) may also read
        tables of sources this follower does not follow."""
        for parent in node.depends_on.nodes:
            other = self.manifest.nodes.get(parent)
            if other is None or other.resource_type != "model" or parent in chosen:
                continue
            if not self.spark.catalog.tableExists(f"{other.schema}.{other.alias}"):
                return False
        return True

    # -- the folders --------------------------------------------------------

    def _list(self, source: Source) -> dict[str, tuple[int, int]]:
        """Every file under the source's location: path -> (modified ms, size).
        Hidden names (`_` or `.`: markers, checksums) are skipped, as Spark does."""
        location = source.location
        parsed = urlparse(location)
        if parsed.scheme in ("", "file"):
            root = unquote(parsed.path) if parsed.scheme else location
            found = {}
            for folder, dirs, files in os.walk(root):
                dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
                for name in files:
                    if not name.startswith(("_", ".")):
                        path = os.path.join(folder, name)
                        try:
                            st = os.stat(path)
                        except FileNotFoundError:  # gone between the listing and the stat
                            continue
                        found[path] = (st.st_mtime_ns // 1_000_000, st.st_size)
            return found
        jvm = self.spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(self.spark._jsc.hadoopConfiguration())
        found = {}
        if fs.exists(path):
            files = fs.listFiles(path, True)
            while files.hasNext():
                status = files.next()
                name = status.getPath().getName()
                if not name.startswith(("_", ".")):
                    found[str(status.getPath())] = (status.getModificationTime(), status.getLen())
        return found

    def _new_files(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Per source: its data files new or changed since they were last
        seen and unchanged for --settle seconds. A source with a gzip file
        still being copied (_gzip_cut) has none: its run would read that
        file too (a run reads every file its model has not logged), and
        Spark's reader fails on it without naming it."""
        now_ms = time.time() * 1000
        new: dict[str, dict[str, tuple[int, int]]] = {}
        self.waiting = {}
        for uid, source in self.sources.items():
            found, cut = {}, []
            for path, stat in self._list(source).items():
                if (self.seen.get(path) == stat
                        or not source.pattern.matcher(os.path.basename(path)).find()):
                    continue
                if self._gzip_cut(path, stat, now_ms):
                    cut.append(path)
                elif now_ms - stat[0] >= self.options.settle * 1000:
                    found[path] = stat
            if cut:
                self.waiting[uid] = cut
            elif found:
                new[uid] = found
        return new

    def _gzip_cut(self, path: str, stat: tuple[int, int], now_ms: float) -> bool:
        """Whether `path` is a gzip file in a local folder still being copied:
        changed within --settle seconds, or ending before its end-of-stream
        marker. Files are opened (each once per size and time) only when
        modified in the last GZIP_CHECK_SECONDS, so a follower's start does
        not decompress the folders' history; one found cut stays held until
        it changes, however long. A cut file older than that when first
        seen, a gzip file damaged otherwise, and gzip files elsewhere
        (object stores write whole objects) are left to the run, which
        fails on them."""
        if not path.endswith(".gz") or not os.path.isfile(path):
            return False
        if self.gzip_checked.get(path, ((), False)) == (stat, True):
            return True
        if now_ms - stat[0] > GZIP_CHECK_SECONDS * 1000:
            return False
        if now_ms - stat[0] < self.options.settle * 1000:
            return True
        if path not in self.gzip_checked or self.gzip_checked[path][0] != stat:
            cut = 0 < stat[1] < 10  # not even the header
            try:
                with gzip.open(path, "rb") as handle:
                    while handle.read(1 << 20):
                        pass
            except EOFError:
                cut = True
            except (OSError, zlib.error):
                pass
            self.gzip_checked[path] = (stat, cut)
            if cut:
                _say(f"{path}: the gzip file ends before its end-of-stream marker (still being "
                     "copied?); its source's files wait until it is whole")
        return self.gzip_checked[path][1]

    # -- one turn -----------------------------------------------------------

    def cycle(self, first: bool = False) -> list[Applied]:
        """Look for new files; run the models that read them (every followed
        model when `first`, or while that run waits); return the files
        that run made visible."""
        first = first or self.catching_up
        new = self._new_files()
        if not new and not first:
            return []
        if first and self.waiting:  # the catch-up run reads every model's files: after the copies
            return self._put_off_catching_up()
        if self._project_stamp() != self.stamp:
            _say("the project changed: parsing it again")
            self._load_project()
            new = self._new_files()
            first = True
            if self.waiting:
                return self._put_off_catching_up()
        reading = self.models if first else [m for uid in new for m in self.sources[uid].models]
        held = {m for uid in self.waiting for m in self.sources[uid].models}
        # their runs would read a cut gzip file: not run until it is whole
        reading = [m for m in reading if m not in held]
        if not reading:
            return []
        names = [name for name in self._selection(list(dict.fromkeys(reading)), first)
                 if name not in {self.manifest.nodes[m].name for m in held}]
        count = sum(len(files) for files in new.values())
        if self.unreleased is not None:  # the run would find the lock held: released first
            self._release_lock()
        if first:  # every file is new to this process; the file logs say which are applied
            _say(f"catching up ({count} data file(s) in the folders, those not in the file "
                 f"logs are applied): dbt {self._command()} of {len(names)} model(s)")
        else:
            where = ", ".join(self.sources[uid].name for uid in new)
            _say(f"{count} new file(s) in {where}: dbt {self._command()} of {len(names)} "
                 f"model(s): {' '.join(names)}")
        started = time.time()
        # (--no-write-json: a turn does not rewrite manifest.json, 1.3 MB for
        # the sample, nor run_results.json; the parse at start wrote the manifest)
        self._dbt([self._command(), "--select", *names, "--no-write-json",
                   *(["--exclude-resource-type", "unit_test"] if self.options.build else [])],
                  manifest=self.manifest)
        visible = time.time()
        self.runs += 1
        self.catching_up = False
        self.unmaintained.update(names)
        for files in new.values():
            self.seen.update(files)
        done = self._logged_since(started, visible)
        for item in done:
            _say(_file_line(item))
        _say(f"run {self.runs} took {visible - started:.2f} s; {len(done)} file(s) applied")
        self.applied.extend(done)
        return done

    def _put_off_catching_up(self) -> list[Applied]:
        if not self.catching_up:
            _say("catching up waits until the gzip file(s) being copied are whole")
        self.catching_up = True
        return []

    # -- maintenance --------------------------------------------------------

    def maintain_if_due(self) -> list[dict[str, Any]]:
        """--maintain-every: once that many minutes have passed since the last
        maintenance (or the start) and a run has written since, maintain the
        tables those runs wrote; return the audit rows (empty when not due).
        A failed maintenance is reported and tried again after the same
        interval: the files go on being applied."""
        every = self.options.maintain_every
        if every is None or not self.unmaintained or time.time() - self.maintained_at < every * 60:
            return []
        from lakehouse_cdc.dbt_runner import DbtError, LockNotReleased
        from lakehouse_cdc.maintain import audit, format_report, operation, run_holding_lock

        if self._project_stamp() != self.stamp:  # the policy or the macro may have changed
            _say("the project changed: parsing it again")
            self._load_project()
        tables = self._written_tables()
        started = self.maintained_at = time.time()
        if not tables:  # (an empty selection would be every table of the project)
            self.unmaintained.clear()
            return []
        _say(f"maintaining {len(tables)} table(s) the runs wrote (--maintain-every {every:g}); "
             "files landing meanwhile wait")
        run_id = f"follow-maintain-{uuid.uuid4().hex[:12]}"
        held = None
        try:
            run_holding_lock(operation(tables, False, run_id), self.options.vars, run_id,
                             lambda args, given: self._dbt(args, manifest=self.manifest,
                                                           vars=given))
        except LockNotReleased as error:  # the maintenance itself is done
            held = error
        except DbtError as error:
            _say(f"maintenance failed (the files go on being applied; it is tried again in "
                 f"{every:g} minute(s), or run `lakehouse maintain` once follow is stopped):\n"
                 f"{error}")
            self.maintained_at = time.time()
            return []
        rows = audit(self.spark, self.options.schema, run_id)
        for line in format_report(rows).splitlines():
            _say(line)
        _say(f"maintenance took {time.time() - started:.2f} s")
        if held is not None:  # the follower's runs would be refused: tried again before them
            self.unreleased = dict(self.options.vars, lakehouse_lock_holder=run_id)
            _say(f"maintenance done, but {held}. It is tried again before the next run; "
                 "until released (or expired) the lock refuses every build")
        self.unmaintained.clear()
        self.maintained_at = time.time()
        return rows

    def _release_lock(self) -> None:
        """Release the build lock a maintenance kept (maintain_if_due); when
        it still cannot be, LockNotReleased stops the follower, whose run
        the lock would refuse."""
        from lakehouse_cdc.maintain import release_lock

        holder = self.unreleased["lakehouse_lock_holder"]
        release_lock(self.unreleased, lambda args, given: self._dbt(args, manifest=self.manifest,
                                                                    vars=given))
        self.unreleased = None
        _say(f"the build lock held by {holder} is released")

    def _written_tables(self) -> list[str]:
        """The tables (`schema.table`) of the models run since the last
        maintenance: theirs, their `<model>__cdc_*` state tables and their
        schemas' `cdc_*` logs (not another model's table)."""
        models = [n for n in self.manifest.nodes.values() if n.resource_type == "model"]
        run = [n for n in models if n.name in self.unmaintained
               and n.config.materialized not in ("view", "ephemeral")]
        others = {f"{n.schema}.{n.alias}".lower() for n in models
                  if n.name not in self.unmaintained}
        tables = {f"{n.schema}.{n.alias}".lower() for n in run}
        for schema in sorted({n.schema.lower() for n in run}):
            if not self.spark.catalog.databaseExists(schema):
                continue
            aliases = [n.alias.lower() for n in run if n.schema.lower() == schema]
            for row in self.spark.sql(f"show tables in {schema}").collect():
                name = f"{schema}.{row.tableName}"
                if row.isTemporary or name in others:
                    continue
                if row.tableName.startswith("cdc_") or any(
                        row.tableName.startswith(f"{alias}__cdc_") for alias in aliases):
                    tables.add(name)
        return sorted(tables)

    def _command(self) -> str:
        return "build" if self.options.build else "run"

    def _logged_since(self, started: float, visible: float) -> list[Applied]:
        """The files the followed models logged during the run, one row per
        file (a file read by two models, e.g. a table and its change log, is
        one line: they read it alike, so its largest quarantine is theirs)."""
        schemas = sorted({self.manifest.nodes[uid].schema for uid in self.models})
        logs = [f"{schema}.cdc_file_log" for schema in schemas
                if self.spark.catalog.tableExists(f"{schema}.cdc_file_log")]
        if not logs:
            return []
        union = " union all ".join(
            f"select file_path, file_modified_at, status, rows_in_file, rows_quarantined "
            f"from {log} where applied_at >= timestamp_micros({int(started * 1e6)})"
            for log in logs)
        rows = self.spark.sql(f"""
            select file_path, unix_micros(min(file_modified_at)) as landed,
                   min(status) as status, max(rows_in_file) as rows,
                   max(coalesce(rows_quarantined, 0)) as quarantined
            from ({union}) as logged
            group by file_path
            order by landed, file_path""").collect()
        return [Applied(r.file_path, r.landed / 1e6, visible, r.status, r.rows, r.quarantined)
                for r in rows]


def _file_line(item: Applied) -> str:
    name = unquote(item.path).split("/landing/", 1)[-1] if "/landing/" in item.path \
        else unquote(item.path).rsplit("/", 1)[-1]
    rows = "" if item.rows is None else f"{item.rows} rows"
    quarantined = f", {item.quarantined} quarantined" if item.quarantined else ""
    return f"{name}: {item.status} {rows}{quarantined}, visible {item.latency:.2f} s after landing"


def summary(applied: list[Applied]) -> str:
    latencies = sorted(a.latency for a in applied)
    if not latencies:
        return "no file applied"
    p95 = latencies[min(len(latencies) - 1, int(round(0.95 * (len(latencies) - 1))))]
    return (f"{len(latencies)} file(s) applied; landing to visible: p50 "
            f"{statistics.median(latencies):.2f} s, p95 {p95:.2f} s, max {latencies[-1]:.2f} s")


def follow(options: FollowOptions) -> int:
    from lakehouse_cdc.dbt_runner import DbtError, LockNotReleased
    from lakehouse_cdc.home import lakehouse_home
    from lakehouse_cdc.spark import get_spark, not_on_local_target

    refusal = not_on_local_target("follow", "it runs dbt in its own Spark session; against the "
                                  "cluster run `lakehouse dbt build`")
    if refusal:
        raise SystemExit(f"[follow] {refusal}")
    lakehouse_home()
    stop = {"asked": False}

    def asked_to_stop(signum: int, frame: Any) -> None:
        if stop["asked"]:  # the second Ctrl-C: stop now (the next start resumes)
            raise KeyboardInterrupt
        stop["asked"] = True
        _say("stopping after this turn (Ctrl-C again to stop now)")

    _say("starting Spark and parsing the project")
    follower = Follower(get_spark(), options)
    for source in follower.sources.values():
        names = ", ".join(follower.manifest.nodes[m].name for m in source.models)
        _say(f"watching {source.location} ({source.name}) for {names}")
    signal.signal(signal.SIGINT, asked_to_stop)
    signal.signal(signal.SIGTERM, asked_to_stop)
    try:
        follower.cycle(first=True)
        idle_since = time.time()
        while not stop["asked"]:
            if follower.cycle():
                idle_since = time.time()
            elif not stop["asked"] and follower.maintain_if_due():
                idle_since = time.time()  # a file landing meanwhile is new at the next look
                continue
            elif (options.until_idle is not None
                  and time.time() - idle_since >= options.until_idle):
                _say(f"no new file for {options.until_idle:g} s (--until-idle): stopping")
                break
            else:
                time.sleep(options.interval)
    except LockNotReleased as error:
        _say(f"stopping before the next run, which the lock would refuse: {error}")
        _say(summary(follower.applied))
        return 1
    except DbtError as error:
        _say(f"a run failed; nothing after it was applied. Fix the cause and start again:\n"
             f"{error}")
        _say(summary(follower.applied))
        return 1
    except KeyboardInterrupt:  # (stop now: the lock, if any, is not released)
        _finish(follower, release=False)
        return 130
    _finish(follower)
    return 0


def _finish(follower: Follower, release: bool = True) -> None:
    """What a follower stopping on request leaves: the build lock a
    maintenance kept, released now (`release`) or the command that releases
    it; the files it did not apply; its summary."""
    from lakehouse_cdc.dbt_runner import LockNotReleased

    if follower.unreleased is not None:
        holder = follower.unreleased["lakehouse_lock_holder"]
        if not release:
            _say(f"the build lock held by {holder} is still held; release it: dbt run-operation "
                 f"lakehouse_lock_release --args '{{holder: {holder}}}'")
        else:
            try:
                follower._release_lock()
            except LockNotReleased as error:
                _say(str(error))
    waiting = [path for paths in follower.waiting.values() for path in paths]
    if follower.catching_up:
        _say(f"not applied: the first run (every model's new files) waited for "
             f"{len(waiting)} gzip file(s) still being copied: {', '.join(waiting)}")
    elif waiting:
        _say(f"not applied: the new files of the sources of {len(waiting)} gzip file(s) still "
             f"being copied: {', '.join(waiting)}")
    _say(summary(follower.applied))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schema", default="lakehouse",
                        help="schema prefix, as for `lakehouse run` (default lakehouse)")
    parser.add_argument("--select", default=FollowOptions.select,
                        help="dbt selection of the CDC models to follow (default: every model "
                        "with incremental_strategy cdc_merge)")
    parser.add_argument("--downstream", choices=DOWNSTREAM, default="incremental",
                        help="what else a new file runs: the incremental models downstream "
                        "whose other inputs are built (SCD2 histories, incremental gold; "
                        "default), all models downstream, or none")
    parser.add_argument("--build", action="store_true",
                        help="dbt build instead of dbt run: the models' data tests run too")
    parser.add_argument("--interval", type=float, default=0.5,
                        help="seconds between two looks at the landing folders (default 0.5)")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="take a file once unchanged for this many seconds (default 1.0; "
                        "0 when files are renamed into place or put on S3 whole)")
    parser.add_argument("--until-idle", type=float, metavar="SECONDS",
                        help="stop once no file has landed for this long (default: never)")
    parser.add_argument("--maintain-every", type=float, metavar="MINUTES",
                        help="maintain the tables the runs wrote (compaction, snapshot "
                        "expiry, orphan files: `lakehouse maintain`'s policy) when the folders "
                        "are idle and this many minutes have passed since the last time; 0: "
                        "whenever idle after a run (default: never; on the embedded default "
                        "no other process can maintain them while follow runs)")
    parser.add_argument("--landing", help="landing root (default $LAKEHOUSE_LANDING, else "
                        "$LAKEHOUSE_HOME/landing)")
    parser.add_argument("--format", choices=("csv", "parquet", "debezium"),
                        help="bronze_format var, as for `lakehouse run`")
    parser.add_argument("--verbose", action="store_true", help="print dbt's own output too")


def main(args: argparse.Namespace) -> int:
    if args.maintain_every is not None and args.maintain_every < 0:
        raise SystemExit(f"[follow] --maintain-every {args.maintain_every:g}: minutes, 0 or more")
    variables: dict[str, Any] = {}
    if args.landing:
        variables["landing_root"] = str(Path(args.landing).resolve())
    if args.format:
        variables["bronze_format"] = args.format
    return follow(FollowOptions(schema=args.schema, select=args.select,
                                downstream=args.downstream, build=args.build,
                                interval=args.interval, settle=args.settle,
                                until_idle=args.until_idle, vars=variables,
                                maintain_every=args.maintain_every,
                                verbose=args.verbose))
