"""Child process of test_silver_crash.py: its own Spark JVM and metastore.

    python _crash_child.py build SIM LANDING SCHEMA LOGDIR SELECT [BATCH ...] [--dump OUT.json]
        land the given batches, then dbt run the SELECT models (a
        space-separated dbt selection); with --dump, then write every silver
        table's and dimension's rows and the file log as JSON (in the same
        JVM: one cold JVM less than a child of its own)
    python _crash_child.py follow OUT.json FOLLOW_ARGS...
        `lakehouse follow FOLLOW_ARGS` in this process, then the dump of its
        --schema (test_follow.py: one JVM for both); first, the Iceberg
        tables named in LAKEHOUSE_TEST_DECOYS (`schema.table`, space-separated)
        are created with one row, tables follow must leave alone

The JVM's options come from LAKEHOUSE_JAVA_OPTIONS (the profile appends
them to the driver's): the test passes a class-data archive, so that the
thirty-odd cold JVMs load Spark's classes from one file.

Crash points (environment):
    LAKEHOUSE_CRASH_AT     kill this process with SIGKILL at its N-th write
                           statement (merge, insert, delete, update, create,
                           alter, drop...) of the build
    LAKEHOUSE_CRASH_AFTER  1: once that statement has run (its commit done);
                           otherwise just before it runs
    LAKEHOUSE_CRASH_REPORT file the child appends each write statement's
                           number and first line to (fsynced), so the test
                           knows where the kill fell and how many writes a
                           complete build made
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cdc_helpers import SILVER, Scenario, canon, interpreted, silver_state  # noqa: E402
from lakehouse_cdc.simulator import TABLES  # noqa: E402
from lakehouse_cdc.spark import get_spark  # noqa: E402

WRITES = re.compile(
    r"^(merge|insert|delete|update|create|alter|drop|replace|truncate|call)\b", re.I
)
COMMENTS = re.compile(r"/\*.*?\*/|--[^\n]*", re.S)


def _statement(sql: str) -> str:
    return COMMENTS.sub(" ", sql).strip()


def _arm_crash_points() -> None:
    """Count the build's write statements; SIGKILL at the chosen one."""
    from dbt.adapters.spark.session import Cursor

    crash_at = int(os.environ.get("LAKEHOUSE_CRASH_AT", "0"))
    after = os.environ.get("LAKEHOUSE_CRASH_AFTER") == "1"
    report = os.environ.get("LAKEHOUSE_CRASH_REPORT")
    execute = Cursor.execute
    writes = 0

    def note(line: str) -> None:
        if report:
            with open(report, "a") as out:
                out.write(line + "\n")
                out.flush()
                os.fsync(out.fileno())

    def counted(self, sql: str, *parameters):
        nonlocal writes
        text = _statement(sql)
        if not WRITES.match(text):
            return execute(self, sql, *parameters)
        writes += 1
        first = " ".join(text.split())[:160]
        note(f"{writes}\t{first}")
        if writes == crash_at and not after:
            note("killed before")
            os.kill(os.getpid(), signal.SIGKILL)
        result = execute(self, sql, *parameters)
        if writes == crash_at and after:
            note("killed after")
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    Cursor.execute = counted


def main(argv: list[str]) -> int:
    spark = get_spark()
    with interpreted(spark):
        code = _run(spark, argv)
    _exit_jvm(spark)
    return code


def _run(spark, argv: list[str]) -> int:
    if argv[0] == "build":
        sim, landing, schema, logdir, select, *batches = argv[1:]
        dump = batches[batches.index("--dump") + 1] if "--dump" in batches else None
        batches = batches[:batches.index("--dump")] if dump else batches
        scenario = Scenario(Path(sim), Path(landing), schema)
        for batch in batches:
            scenario.land(int(batch))
        from lakehouse_cdc.dbt_runner import run_dbt

        _arm_crash_points()
        run_dbt(["run", "--select", *select.split(), "--log-path", logdir],
                schema=schema, vars={"landing_root": landing},
                target_path=Path(logdir).parent / "target")
        if dump:
            _dump(spark, schema, dump)
    elif argv[0] == "follow":
        from lakehouse_cdc.cli import main as lakehouse

        out, *args = argv[1:]
        for decoy in os.environ.get("LAKEHOUSE_TEST_DECOYS", "").split():
            spark.sql(f"create database if not exists {decoy.split('.')[0]}")
            spark.sql(f"create table {decoy} (id int) using iceberg")
            spark.sql(f"insert into {decoy} values (1)")
        code = lakehouse(["follow", *args])
        if code != 0:
            return code
        _dump(spark, args[args.index("--schema") + 1], out)
    return 0


def _dump(spark, schema: str, out: str) -> None:
    """Every silver table's and dimension's rows, the file log and the
    maintenance audit, as JSON."""
    state = {t: [[list(k), v] for k, v in silver_state(spark, schema, t).items()]
             for t in TABLES if spark.catalog.tableExists(f"{schema}_silver.{SILVER[t]}")}
    for dim in ("dim_product",):
        state[dim] = [
            {c: v if v is None or isinstance(v, bool) else canon(v)
             for c, v in r.asDict().items()}
            for r in spark.sql(f"select * from {schema}_dimensions.{dim}").collect()
        ]
    state["file_log"] = [
        [r.model_name, r.file_path, r.status, r.rows_in_file, r.row_count, r.rows_applied,
         r.rows_superseded, r.rows_quarantined]
        for r in spark.sql(f"select * from {schema}_silver.cdc_file_log").collect()
    ]
    audit = f"{schema}_ops.maintenance_audit"  # `follow --maintain-every`'s runs
    state["maintenance"] = [r.asDict() for r in spark.sql(f"select * from {audit}").collect()] \
        if spark.catalog.tableExists(audit) else []
    Path(out).write_text(json.dumps(state, default=str))


def _exit_jvm(spark) -> None:
    """Stop Spark and wait until its JVM has exited: a JVM asked to archive
    the classes it loaded (LAKEHOUSE_JAVA_OPTIONS) writes the archive as it
    exits, and the next child must not find the metastore still open."""
    from pyspark import SparkContext

    proc = SparkContext._gateway.proc
    spark.stop()
    proc.stdin.close()  # the gateway JVM exits when its stdin closes
    proc.wait(timeout=300)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
