"""The project on a real Spark standalone cluster (`lakehouse cluster up`):
PostgreSQL catalog, one master, one worker, the Thrift server. dbt runs in
subprocesses with DBT_TARGET=cluster, so no Spark of this test process does
the work. Truth comes from the simulator, never from pipeline output. Each
test's work (its own cluster, up and down) runs in the background thread
beside the in-process tests (conftest.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from cdc_helpers import SILVER, diff, silver_state, truth_state
from conftest import WAREHOUSE_KNOBS, running_cluster
from lakehouse_cdc.cluster import ui_json
from lakehouse_cdc.simulator import TABLES, land_batch
from scd_truth import DIMENSIONS, full_history
from test_dimensions import _rows as dimension_rows
from test_gold import _truth as gold_truth

KNOBS = {**WAREHOUSE_KNOBS, "scale": 30, "batches": 2, "changes_per_batch": 40}
SCHEMA = "t_cluster"


class ThriftSpark:
    """The bits of the SparkSession API the shared truth helpers use, answered
    by the cluster's Thrift server."""

    def __init__(self, env: dict[str, str]) -> None:
        from lakehouse_cdc.cluster import ThriftTables

        self.tables = ThriftTables(int(env["LAKEHOUSE_THRIFT_PORT"]))

    def sql(self, query: str) -> SimpleNamespace:
        rows = self.tables.sql(query)
        return SimpleNamespace(collect=lambda: rows)

    def table(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(schema=[SimpleNamespace(name=c)
                                       for c in self.tables.columns(name)])


def _dbt(env: dict[str, str], tmp: Path, name: str, landing: Path) -> list[str]:
    out = tmp / name
    # dbt's data tests are proven by the embedded suite: here the engine is on trial
    return [sys.executable, "-m", "lakehouse_cdc.cli", "dbt", "build",
            "--exclude-resource-type", "test", "--exclude-resource-type", "unit_test",
            "--vars", json.dumps({"landing_root": str(landing)}),
            "--target-path", str(out / "target"), "--log-path", str(out / "logs")]


def _build(work, env, tmp, name, landing) -> subprocess.CompletedProcess:
    done = work.run(_dbt(env, tmp, name, landing), timeout=900,
                    env={**env, "LAKEHOUSE_SCHEMA": SCHEMA}, **CAPTURED)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done


CAPTURED = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}


def _json(url: str):
    """A one-off read of a Spark UI's JSON: it waits a minute (the CI
    machine's slow hour took over 5 s, 2026-12-02)."""
    return ui_json(url, timeout=60)


def _executors(env: dict[str, str]) -> list[dict]:
    base = f"http://127.0.0.1:{env['LAKEHOUSE_THRIFT_UI_PORT']}/api/v1/applications"
    (app,) = _json(base)
    return _json(f"{base}/{app['id']}/allexecutors")


def _silver(spark: ThriftSpark) -> dict[str, dict]:
    return {table: silver_state(spark, SCHEMA, table) for table in TABLES}


def _assert_warehouse_is_truth(spark: ThriftSpark, sim: Path, batch: int) -> None:
    for table in TABLES:
        expected = truth_state(sim, table, batch)
        actual = silver_state(spark, SCHEMA, table)
        assert actual == expected, f"{SILVER[table]} after batch {batch}: " + diff(expected, actual)
    for dim in DIMENSIONS:
        rows = spark.sql(f"select * from {SCHEMA}_dimensions.{dim}").collect()
        actual = {k: {c: v for c, v in r.items() if c != "sk"}
                  for k, r in dimension_rows(rows, dim).items()}
        expected = full_history(sim, dim, batch)
        assert actual == expected, f"{dim} after batch {batch}: " + diff(expected, actual)
    truth = gold_truth(sim, batch)
    country = {(str(r["order_date"]), r["country"]): (r["order_count"], r["revenue"])
               for r in spark.sql(f"select * from {SCHEMA}_gold.mart_daily_revenue_by_country"
                                  ).collect()}
    assert country == truth["country"], f"mart_daily_revenue_by_country after batch {batch}"
    amounts = {str(r["order_id"]): (r["order_amount"], r["line_count"], r["is_cancelled"])
               for r in spark.sql(f"select * from {SCHEMA}_gold.fct_orders").collect()}
    assert amounts == {k: (f["amount"], f["lines"], f["cancelled"])
                       for k, f in truth["facts"].items()}, f"fct_orders after batch {batch}"


def _on_one_cluster(work) -> None:
    """Both checks on one cluster: `cluster up` and `down` cost a minute or
    more of the CI's two cores each time."""
    with running_cluster(work) as env:
        _builds_to_the_truth_on(work, env)
        _maintains_on(work, env)
        _two_writers_on(work, env)


def _builds_to_the_truth_on(work, env: dict[str, str]) -> None:
    sim, tmp_path = work.simulated(**KNOBS), work.tmp_path
    landing = tmp_path / "landing"
    spark = ThriftSpark(env)
    tasks_before = sum(e["totalTasks"] for e in _executors(env) if e["id"] != "driver")

    # full load + first CDC batch
    land_batch(sim, landing, 0)
    land_batch(sim, landing, 1)
    _build(work, env, tmp_path, "first", landing)
    _assert_warehouse_is_truth(spark, sim, 1)

    # the work ran on the worker's executor: the Thrift server's application
    # has a non-driver executor whose task count grew; the driver runs none
    executors = _executors(env)
    workers = [e for e in executors if e["id"] != "driver"]
    assert workers and sum(e["totalTasks"] for e in workers) > tasks_before + 50
    assert all(e["totalTasks"] == 0 for e in executors if e["id"] == "driver")
    master = f"http://127.0.0.1:{env['LAKEHOUSE_MASTER_UI_PORT']}/json/"
    state = _json(master)
    assert [w["state"] for w in state["workers"]] == ["ALIVE"]
    assert [a["name"] for a in state["activeapps"]] == ["lakehouse-thrift"]

    # second CDC batch: build A runs; build B started meanwhile fails fast naming
    # A; a reader through Thrift sees, table by table, the truth before or after
    before = {t: truth_state(sim, t, 1) for t in TABLES}
    after = {t: truth_state(sim, t, 2) for t in TABLES}
    land_batch(sim, landing, 2)
    build_env = {**env, "LAKEHOUSE_SCHEMA": SCHEMA}
    a = work.popen(_dbt(env, tmp_path, "a", landing), env=build_env, text=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    holder = None
    deadline = time.monotonic() + 300
    while holder is None and a.poll() is None and time.monotonic() < deadline:
        rows = spark.sql(f"select holder, purpose from {SCHEMA}_ops.lakehouse_lock "
                         "where holder is not null").collect()
        holder = rows[0] if rows else None
        time.sleep(0.5)
    assert holder is not None, "build A never took the lock"
    started = time.monotonic()
    b = work.run(_dbt(env, tmp_path, "b", landing), timeout=300, env=build_env, **CAPTURED)
    b_seconds = time.monotonic() - started
    assert b.returncode != 0, "a second build ran while the first held the lock"
    assert "lakehouse lock busy" in b.stdout + b.stderr
    assert holder["holder"] in b.stdout + b.stderr  # names the running build
    assert "dbt build" in holder["purpose"]

    seen: list[dict] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set() and len(seen) < 100:
                seen.append(_silver(spark))
        except BaseException as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    a_out, _ = a.communicate(timeout=900)
    stop.set()
    reader.join(timeout=120)
    assert a.returncode == 0, a_out[-4000:]
    assert not errors, f"a read during the build failed: {errors[0]!r}"
    assert seen, "the reader never completed a read during the build"
    for state in seen:
        for table in TABLES:
            assert state[table] in (before[table], after[table]), (
                f"{SILVER[table]} read mid-build is neither the state before nor after: "
                + diff(after[table], state[table]))
    _assert_warehouse_is_truth(spark, sim, 2)
    # each CDC model read its new files from the run's one listing (made by
    # the on-run-start hook in its Thrift session, seen by every thread's
    # session); none listed its own source
    a_log = (tmp_path / "a" / "logs" / "dbt.log").read_text()
    from_run_listing = re.findall(r"create or replace temporary view (\w+)__cdc_files as", a_log)
    assert set(from_run_listing) >= set(SILVER.values()), from_run_listing
    assert not re.search(r"cache table \w+__cdc_files", a_log)
    # on a shared catalog each batch reads its horizon: the listing dbt took
    # before the lock is not trusted to say it is empty (_cdc_known_empty)
    horizon_read = set(re.findall(r"from \S+\.(\w+)__cdc_horizon as p\b", a_log))
    assert horizon_read >= set(SILVER.values()), horizon_read
    # no change file was applied twice, and the lock is free again
    logged = spark.sql(f"select model_name, file_path, count(*) n from {SCHEMA}_silver."
                       "cdc_file_log group by model_name, file_path having count(*) > 1"
                       ).collect()
    assert logged == []
    assert spark.sql(f"select holder from {SCHEMA}_ops.lakehouse_lock").collect() == [
        {"holder": None}]
    work.note(f"second build failed fast in {b_seconds:.1f}s; {len(seen)} consistent reads")

    # docs and the Great Expectations suites run against the cluster too
    docs = work.run([sys.executable, "-m", "lakehouse_cdc.cli", "dbt", "docs", "generate",
                     "--target-path", str(tmp_path / "docs")], timeout=600, env=build_env,
                    **CAPTURED)
    assert docs.returncode == 0, docs.stdout[-3000:] + docs.stderr[-2000:]
    catalog = json.loads((tmp_path / "docs" / "catalog.json").read_text())["nodes"]
    for node in ("model.lakehouse_cdc.slv_retail__orders", "model.lakehouse_cdc.dim_customer",
                 "model.lakehouse_cdc.fct_orders"):
        assert catalog[node]["columns"], node
    quality = work.run([sys.executable, "-m", "lakehouse_cdc.cli", "quality", "--schema",
                        SCHEMA, "--out", str(tmp_path / "quality")], timeout=600, env=build_env,
                       **CAPTURED)
    assert quality.returncode in (0, 1), quality.stdout[-3000:] + quality.stderr[-2000:]
    results = {p.stem: json.loads(p.read_text())
               for p in (tmp_path / "quality" / "results").glob("*.json")}
    assert len(results) == 5
    # silver equals the truth (above), so its key is unique: GX must say so
    unique = [r for r in results["slv_retail__customer_master"]["results"]
              if r["expectation_config"]["type"] == "expect_column_values_to_be_unique"]
    assert [r["success"] for r in unique] == [True]
    rows = spark.sql(f"select count(*) n from {SCHEMA}_silver.slv_retail__customer_master"
                     ).collect()
    assert unique[0]["result"]["element_count"] == rows[0]["n"]


def _maintains_on(work, env: dict[str, str]) -> None:
    """`lakehouse maintain` on the cluster target: it maintains through the
    Thrift server and reports what Iceberg's own metadata says; it is
    refused while another holds the build lock, leaving that lock alone;
    and when it fails after taking the lock it releases it (a failing
    run-operation runs no on-run-end hook)."""
    spark = ThriftSpark(env)
    table = f"{SCHEMA}_silver.slv_retail__orders"
    lock = f"{SCHEMA}_ops.lakehouse_lock"

    def maintain() -> subprocess.CompletedProcess:
        return work.run([sys.executable, "-m", "lakehouse_cdc.cli", "maintain", "--schema",
                         SCHEMA, "--select", table], timeout=600, env=env, **CAPTURED)

    def files() -> dict[int, int]:  # content (0 data, 1 position deletes) -> files
        rows = spark.sql(f"select content, count(*) n from {table}.files group by content"
                         ).collect()
        return {r["content"]: r["n"] for r in rows}

    before = files()
    since = spark.sql("select cast(current_timestamp() as string) now").collect()[0]["now"]
    done = maintain()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    after = files()
    audited = spark.sql(f"select table_name, data_files_before, data_files_after, "
                        f"delete_files_before, delete_files_after "
                        f"from {SCHEMA}_ops.maintenance_audit "
                        f"where finished_at >= timestamp '{since}'").collect()
    assert audited == [{"table_name": table, "data_files_before": before[0],
                        "data_files_after": after[0], "delete_files_before": before.get(1, 0),
                        "delete_files_after": after.get(1, 0)}]
    assert table in done.stdout
    assert spark.sql(f"select holder from {lock}").collect() == [{"holder": None}]

    # held by a build: refused, and that build's lock stays its own
    spark.sql(f"update {lock} set holder = 'a-running-build', purpose = 'dbt build', "
              "held_by = 'someone@elsewhere', acquired_at = current_timestamp(), "
              "expires_at = current_timestamp() + interval 1 hour")
    refused = maintain()
    assert refused.returncode != 0
    assert "lakehouse lock busy" in refused.stdout + refused.stderr
    assert spark.sql(f"select holder from {lock}").collect() == [{"holder": "a-running-build"}]
    spark.sql(f"update {lock} set holder = null, purpose = null, held_by = null, "
              "acquired_at = null, expires_at = null")

    # failing after the lock is taken (its audit row cannot be written: an
    # audit table of another shape): the lock is free again at once
    audit = f"{SCHEMA}_ops.maintenance_audit"
    spark.sql(f"alter table {audit} rename to {audit}_kept")
    spark.sql(f"create table {audit} (run_id string) using iceberg")
    failed = maintain()
    assert failed.returncode != 0
    assert "INSERT_COLUMN_ARITY_MISMATCH" in failed.stdout + failed.stderr
    assert spark.sql(f"select holder from {lock}").collect() == [{"holder": None}]
    spark.sql(f"drop table {audit}")
    spark.sql(f"alter table {audit}_kept rename to {audit}")


@pytest.mark.background(work=_on_one_cluster)
def test_cluster_builds_to_the_truth_safely_under_concurrency_and_keeps_every_commit(background):
    """CDC batches built on the cluster equal the truth; a second build is
    refused while one runs; readers see each table before or after a build;
    `lakehouse maintain` works there and never leaves the lock taken; and
    two processes appending to one table at once lose no commit."""
    background()


WRITER = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    from lakehouse_cdc.cluster import load, server_conf
    conf = server_conf(load())
    conf.update({"spark.master": "local[1]", "spark.ui.enabled": "false",
                 "spark.eventLog.enabled": "false"})
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(int(sys.argv[2])):
        spark.sql(f"insert into {sys.argv[1]} values ('process', {i})")
    spark.stop()
""")


def _two_writers_on(work, env: dict[str, str]) -> None:
    """A second JVM (a local Spark on the same PostgreSQL catalog) and the
    Thrift server append to one Iceberg table at the same time; Iceberg's
    metastore lock serializes the commits and none is lost."""
    from lakehouse_cdc.cluster import ThriftTables, _psql, load

    thrift = ThriftTables(int(env["LAKEHOUSE_THRIFT_PORT"]))
    table = "t_cluster_writers.events"
    thrift.sql("create database if not exists t_cluster_writers")
    thrift.sql(f"create table {table} (writer string, n int) using iceberg")
    commits = 8
    writer = work.popen([sys.executable, "-c", WRITER, table, str(commits)], env=env,
                        text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    assert writer.stdout.readline().strip() == "ready", writer.stderr.read()[-3000:]
    cluster = load(Path(env["LAKEHOUSE_CLUSTER_HOME"]))
    locks_before = int(_psql(cluster, "select nl_next from next_lock_id"))
    writer.stdin.write("go\n")
    writer.stdin.flush()
    for i in range(commits):
        thrift.sql(f"insert into {table} values ('thrift', {i})")
    _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err[-3000:]

    rows = sorted((r["writer"], r["n"]) for r in thrift.sql(f"select * from {table}"))
    expected = sorted((w, i) for w in ("process", "thrift") for i in range(commits))
    assert rows == expected
    appends = thrift.sql(f"select count(*) n from {table}.snapshots where operation = 'append'")
    assert appends == [{"n": 2 * commits}]
    # every commit took Iceberg's lock in the shared metastore
    assert int(_psql(cluster, "select nl_next from next_lock_id")) - locks_before >= 2 * commits
