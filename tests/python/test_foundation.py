"""Foundation: dbt sees its Iceberg tables, so incrementals merge and
snapshots keep history run after run; the docs catalog has every column."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from lakehouse_cdc.dbt_runner import DbtError, run_dbt


def _snapshots(spark, table: str) -> list:
    return spark.sql(
        f"select snapshot_id, parent_id, operation, summary from {table}.snapshots "
        "order by committed_at"
    ).collect()


def test_incremental_run_two_merges_into_existing_table(spark, schema, fixture_project, tmp_path):
    project = fixture_project("smoke")
    run_dbt(["run", "--select", "smoke_incremental"], project_dir=project, schema=schema,
            vars={"batch": 1}, target_path=tmp_path / "target")
    first = _snapshots(spark, f"{schema}.smoke_incremental")
    result = run_dbt(["run", "--select", "smoke_incremental"], project_dir=project,
                     schema=schema, vars={"batch": 2}, target_path=tmp_path / "target")

    compiled = (tmp_path / "target" / "run" / "smoke" / "models" / "smoke_incremental.sql")
    assert "merge into" in compiled.read_text().lower(), "run 2 did not issue a MERGE"
    assert result.result.results[0].status == "success"

    snaps = _snapshots(spark, f"{schema}.smoke_incremental")
    # the table was not recreated: run 2's snapshot descends from run 1's
    assert len(first) == 1 and len(snaps) == 2
    assert snaps[1].parent_id == snaps[0].snapshot_id == first[0].snapshot_id

    rows = {(r.id, r.label, r.batch) for r in
            spark.sql(f"select id, label, batch from {schema}.smoke_incremental").collect()}
    # id 1 is only in run 1's output; id 2 was updated by run 2; id 3 is new
    assert rows == {(1, "one", 1), (2, "two-b", 2), (3, "three", 2)}


def test_snapshot_keeps_history_over_three_runs(spark, schema, fixture_project, tmp_path):
    project = fixture_project("smoke")
    for batch in (1, 2, 3):
        run_dbt(["snapshot"], project_dir=project, schema=schema, vars={"batch": batch},
                target_path=tmp_path / "target")
    rows = spark.sql(
        f"select id, label, dbt_valid_to is null as is_current "
        f"from {schema}_snapshots.smoke_snapshot order by id, dbt_valid_from"
    ).collect()
    assert [(r.id, r.label, r.is_current) for r in rows] == [
        (1, "v1", False), (1, "v2", False), (1, "v3", True), (2, "fixed", True),
    ]
    snaps = _snapshots(spark, f"{schema}_snapshots.smoke_snapshot")
    assert len(snaps) >= 3, "snapshot table was recreated instead of merged"
    assert all(s.parent_id is not None for s in snaps[1:])


def test_docs_catalog_lists_columns_of_every_node(spark, schema, fixture_project, tmp_path):
    project = fixture_project("smoke")
    target = tmp_path / "target"
    run_dbt(["build"], project_dir=project, schema=schema, vars={"batch": 1}, target_path=target)
    run_dbt(["docs", "generate"], project_dir=project, schema=schema, vars={"batch": 1},
            target_path=target)
    catalog = json.loads((target / "catalog.json").read_text())
    manifest = json.loads((target / "manifest.json").read_text())
    expected = {uid: node for uid, node in manifest["nodes"].items()
                if node["resource_type"] in ("model", "snapshot")}
    assert expected, "fixture has no models"
    for uid in expected:
        entry = catalog["nodes"].get(uid)
        assert entry is not None, f"{uid} missing from catalog.json"
        columns = {c.lower(): v["type"] for c, v in entry["columns"].items()}
        assert "id" in columns and columns["id"] in ("int", "integer"), (uid, columns)
        assert "label" in columns and columns["label"] == "string", (uid, columns)


def test_statements_run_under_the_profile_settings(spark, fixture_project, tmp_path):
    """run_dbt applies the profile's Spark settings once per invocation and
    again after a statement that changes one (dbt-spark's cursor applied them
    before every statement): a SET by one statement, or a change made from
    Python between invocations, is still undone before the next statement."""
    import dbt.adapters.spark.session as spark_session
    from lakehouse_cdc.spark import spark_conf

    project = fixture_project("smoke")
    expected = spark_conf()["spark.sql.shuffle.partitions"]
    changed = int(expected) + 3
    spark.conf.set("spark.sql.shuffle.partitions", str(changed + 1))
    run_dbt(["run-operation", "assert_shuffle_partitions", "--args",
             json.dumps({"expected": expected, "changed": changed})],
            project_dir=project, target_path=tmp_path / "target")
    assert getattr(spark_session.Cursor.execute, "_lakehouse", False), "not installed"
    assert spark.conf.get("spark.sql.shuffle.partitions") == expected


def test_a_setting_a_failed_invocation_left_is_undone_by_the_next(spark, fixture_project,
                                                                  tmp_path):
    """A setting outside the profile that a statement set (a CDC run's
    bloom-filter settings around its MERGE) and that the invocation could not
    reset, because it failed in between, is reset before the next invocation's
    first statement, as a new dbt process would start without it; one set
    from Python is left as it is."""
    project = fixture_project("smoke")
    key = "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold"
    by_python = "spark.sql.files.maxRecordsPerFile"
    before = spark.conf.get(key)
    spark.conf.set(by_python, "12345")
    try:
        operation = {"project_dir": project, "target_path": tmp_path / "target"}
        failed = run_dbt(["run-operation", "set_setting", "--args",
                          json.dumps({"key": key, "value": "0"})],
                         expect_success=False, **operation)
        assert not failed.success
        assert spark.conf.get(key) == "0", "the failed invocation did not leave its setting"
        run_dbt(["run-operation", "assert_setting", "--args",
                 json.dumps({"key": key, "expected": before})], **operation)
        run_dbt(["run-operation", "assert_setting", "--args",
                 json.dumps({"key": by_python, "expected": "12345"})], **operation)
    finally:
        spark.conf.unset(by_python)



def test_reused_macros_equal_a_fresh_parse(tmp_path):
    """The session reuses the macros of an earlier whole-project parse
    (`_dbt_macro_cache.py`): a parse with other vars and another schema that
    reuses them, in another copy of the project (another folder), gives the
    same manifest (macros, their dependencies, models) as a fresh parse of
    the same inputs."""
    import _dbt_macro_cache
    from lakehouse_cdc import copy_project

    # two copies of the project in folders of their own
    one, other = (copy_project(tmp_path / name) for name in ("one", "other"))

    def parse(project: Path, schema: str, landing: str, target: str):
        # a target folder of its own: a whole-project parse each time
        return run_dbt(["parse", "--no-write-json"], project_dir=project, schema=schema,
                       vars={"landing_root": str(tmp_path / landing)},
                       target_path=tmp_path / target).result

    first = parse(one, "parse_a", "a", "first")
    reused = parse(other, "parse_b", "b", "reused")
    with _dbt_macro_cache.bypassed():
        fresh = parse(other, "parse_b", "b", "fresh")
    # the second parse took the first one's macros: dbt stamps each macro it
    # makes (and each one its YAML documents, again)
    assert reused.macros.keys() == first.macros.keys()
    unpatched = [m for m in reused.macros if reused.macros[m].patch_path is None]
    assert len(unpatched) > 500
    assert [m for m in unpatched if reused.macros[m].created_at != first.macros[m].created_at] == []
    assert [m for m in unpatched if fresh.macros[m].created_at <= first.macros[m].created_at] == []
    # and it is what a fresh parse of its inputs gives
    for kind in ("macros", "nodes", "sources", "docs"):
        mine, theirs = getattr(reused, kind), getattr(fresh, kind)
        assert mine.keys() == theirs.keys(), kind
        assert [n for n in mine if _without_time(mine[n]) != _without_time(theirs[n])] == [], kind
    assert sum(len(m.depends_on.macros) for m in reused.macros.values()) > 100


def _without_time(node) -> dict:
    data = node.to_dict()
    data.pop("created_at", None)
    return data


def test_a_failed_operation_says_why(spark, fixture_project, tmp_path):
    """dbt leaves a failed run-operation's result without a message (it logs
    the error); run_dbt's error carries it, so `lakehouse maintain` and
    `follow --maintain-every` print the cause, not `None`."""
    project = fixture_project("smoke")
    key = "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold"
    before = spark.conf.get(key)
    try:
        run_dbt(["run-operation", "set_setting", "--args", json.dumps({"key": key, "value": "0"})],
                project_dir=project, target_path=tmp_path / "target")
    except DbtError as error:
        assert f"failed after setting {key}" in str(error), str(error)
    else:
        raise AssertionError("the failing operation did not fail")
    finally:
        spark.conf.set(key, before)


INTERRUPTED = textwrap.dedent("""
    import os, signal, sys, threading, time
    from lakehouse_cdc.dbt_runner import DbtError, run_dbt
    project, target = sys.argv[1], os.path.join(sys.argv[1], "target")
    manifest = run_dbt(["parse"], project_dir=project, target_path=target).result
    threading.Timer(float(sys.argv[2]), os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.time()
    try:  # parsed already: dbt is in the macro's loop well before the timer
        run_dbt(["run-operation", "busy_loop"], project_dir=project, target_path=target,
                manifest=manifest)
    except KeyboardInterrupt:
        print(f"interrupted after {time.time() - started:.1f} s")
        sys.exit(130)
    except DbtError as error:
        print(f"DbtError: {error}")
        sys.exit(1)
    print("not interrupted")
""")


def test_ctrl_c_during_a_dbt_invocation_is_an_interrupt_not_a_failure(fixture_project):
    """dbt catches Ctrl-C (it cancels its statements) and returns a failure;
    run_dbt raises KeyboardInterrupt again, so `lakehouse` exits 130 and a
    second Ctrl-C stops `follow` as interrupted, not as a failed run. In a
    child process whose macro loops in Jinja and runs no statement (an
    interrupted py4j call would leave this session's connection out of step)."""
    project = fixture_project("smoke")
    child = subprocess.run([sys.executable, "-c", INTERRUPTED, str(project), "3"],
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 130, child.stdout[-3000:] + child.stderr[-3000:]
    assert "interrupted after 3." in child.stdout, child.stdout[-3000:]
