"""The README's run command (`lakehouse run`), as a command of its own: it
lands the sample, builds every layer, prints the run summary and the Great
Expectations result, leaves Data Docs where it says, and a second run lands
nothing and commits nothing. Run here on the Debezium sample so that format
also goes through dimensions, gold and the suites. The work runs in the
background thread beside the in-process tests (conftest.py)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from lakehouse_cdc.simulator import TABLES, read_files


def _lakehouse(work, home: Path, java_options: str, *args: str) -> str:
    """`lakehouse ARGS` as the README runs it, in its own process and JVM with
    its own warehouse and metastore (Derby admits one process); the JVM
    started as the test suite's other children are (`child_java_options`)."""
    exe = shutil.which("lakehouse", path=str(Path(sys.executable).parent)) or "lakehouse"
    env = {**work.env, "LAKEHOUSE_HOME": str(home), "LAKEHOUSE_SHUFFLE_PARTITIONS": "2",
           "LAKEHOUSE_JAVA_OPTIONS": java_options}
    env.pop("LAKEHOUSE_LANDING", None)
    proc = work.run([exe, *args], timeout=1500, env=env, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _commits(home: Path) -> dict[str, int]:
    """Iceberg metadata files per silver table and seed: one more per commit.
    Not the change-log views (Iceberg views: a new version each time dbt
    replaces one, data or not)."""
    commits = {}
    warehouse = home / "warehouse"
    for table in [*warehouse.glob("*_silver.db/slv_retail__*"), *warehouse.glob("*_seeds.db/*")]:
        files = list((table / "metadata").glob("*.metadata.json"))
        first = files[0].read_bytes() if files else b""
        if first.startswith(b"\x1f\x8b"):  # gzip: Iceberg writes view metadata compressed
            first = gzip.decompress(first)
        if b'"view-uuid"' not in first:
            commits[table.name] = len(files)
    return commits


def _summary(out: str) -> dict[str, tuple[int, int, int]]:
    """model -> (files, rows read, applied + superseded + quarantined), as printed."""
    rows = {}
    if "Run summary (silver CDC apply)" not in out:
        return rows
    for line in out.split("Run summary (silver CDC apply)")[1].splitlines()[2:]:
        if not line.startswith("slv_retail__"):
            break
        name, files, read, applied, superseded, quarantined, *_ignored_held_snapshot = line.split()
        rows[name] = (int(files), int(read), int(applied) + int(superseded) + int(quarantined))
    return rows


def _run_twice(work) -> None:
    home, child_java_options = work.tmp_path / "home", work.child_java_options
    args = ("run", "--scale", "30", "--batches", "1", "--seed", "5", "--schema", "t_pipeline",
            "--format", "debezium")
    out = _lakehouse(work, home, child_java_options(), *args)
    written = Counter()
    for entry in read_files(home / "sample"):
        written[entry.table] += entry.rows
    summary = _summary(out)
    assert set(summary) >= {f"slv_retail__{t}" for t in TABLES}
    for table, rows in written.items():
        _files, read, accounted = summary[f"slv_retail__{table}"]
        # every row of every file read once, and accounted for
        assert (read, accounted) == (rows, rows), table
    assert "Great Expectations" in out and "FAILED" not in out
    docs = home / "quality" / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    assert "Data Docs (HTML):" in out and docs.exists()
    for layer in ("dimensions", "gold"):
        assert list((home / "warehouse").glob(f"t_pipeline_{layer}.db/*/metadata")), layer

    commits = _commits(home)
    assert set(commits) >= {f"slv_retail__{t}" for t in TABLES} | {"order_status"}
    again = _lakehouse(work, home, child_java_options(), *args)
    assert "landed batch" not in again
    assert all(read == 0 for _, read, _ in _summary(again).values())
    assert _commits(home) == commits, "a run with nothing new committed to a silver table or seed"
    # every data test that reads only tables and views of the project (the
    # change logs, the date dimension) reuses the pass it got in the first
    # run, which made them (dbt's cache knew them without a type), and so
    # does every unit test
    manifest = json.loads((Path(work.env["DBT_TARGET_PATH"]) / "manifest.json").read_text())
    nodes = manifest["nodes"]
    table_kinds = {"table", "incremental", "seed", "snapshot", "view"}
    on_relations = [n for n in nodes.values() if n["resource_type"] == "test"
                    and n["depends_on"]["nodes"] and not n["sources"]
                    and n["config"]["meta"].get("reuse_pass", True)
                    and all(nodes[p]["config"]["materialized"] in table_kinds
                            and not (nodes[p]["config"]["materialized"] == "view"
                                     and nodes[p].get("sources"))
                            for p in n["depends_on"]["nodes"])]
    assert len(on_relations) > 20 and manifest["unit_tests"]
    reusable = len(on_relations) + len(manifest["unit_tests"])
    # (the whole count: "153 test(s)" must not pass for 53)
    assert re.search(rf"(?<!\d){reusable} test\(s\) reused their pass", again), again[-3000:]


@pytest.mark.background(work=_run_twice)
def test_run_command_end_to_end_and_idempotent(background):
    background()
