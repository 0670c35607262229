"""The README's run command (`lakehouse run`), in-process on the session's
Spark: it lands the sample, builds every layer, prints the run summary and
the Great Expectations result, leaves Data Docs where it says, and a second
run lands nothing and writes no Iceberg snapshot. Run here on the Debezium
sample so that format also goes through dimensions, gold and the suites."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from lakehouse_cdc.simulator import TABLES, read_files


def _snapshots(spark, schema: str) -> dict[str, int]:
    return {t: spark.sql(f"select count(*) n from {schema}_silver.slv_retail__{t}.snapshots"
                         ).first().n for t in TABLES}


def _summary(out: str) -> dict[str, tuple[int, int, int]]:
    """model -> (files, rows read, applied + superseded + quarantined), as printed."""
    rows = {}
    if "Run summary (silver CDC apply)" not in out:
        return rows
    for line in out.split("Run summary (silver CDC apply)")[1].splitlines()[2:]:
        if not line.startswith("slv_retail__"):
            break
        name, files, read, applied, superseded, quarantined, _snapshot = line.split()
        rows[name] = (int(files), int(read), int(applied) + int(superseded) + int(quarantined))
    return rows


def test_run_command_end_to_end_and_idempotent(spark, lakehouse_home, monkeypatch, capsys):
    from lakehouse_cdc.pipeline import RunOptions, run

    # run() sets these for its own process; keep them from leaking into other tests
    monkeypatch.setenv("LAKEHOUSE_SCHEMA", os.environ.get("LAKEHOUSE_SCHEMA", "lakehouse"))
    monkeypatch.setenv("LAKEHOUSE_LANDING", str(lakehouse_home / "landing"))
    options = RunOptions(scale=30, batches=1, seed=5, schema="t_pipeline", format="debezium")

    assert run(options) == 0
    out = capsys.readouterr().out
    sample = lakehouse_home / "sample"
    written = Counter()
    for entry in read_files(sample):
        written[entry.table] += entry.rows
    summary = _summary(out)
    assert set(summary) >= {f"slv_retail__{t}" for t in TABLES}
    for table, rows in written.items():
        files, read, accounted = summary[f"slv_retail__{table}"]
        # every row of every file read once, and accounted for
        assert (read, accounted) == (rows, rows), table
    assert "Great Expectations" in out and "FAILED" not in out
    docs = lakehouse_home / "quality" / "gx" / "uncommitted" / "data_docs" / "local_site"
    assert "Data Docs (HTML):" in out
    assert (docs / "index.html").exists()
    for layer in ("dimensions", "gold"):
        assert spark.sql(f"show tables in t_pipeline_{layer}").count() > 0

    before = _snapshots(spark, "t_pipeline")
    assert run(options) == 0
    again = capsys.readouterr().out
    assert "landed batch" not in again
    assert all(read == 0 for _, read, _ in _summary(again).values())
    assert _snapshots(spark, "t_pipeline") == before
    assert Path(lakehouse_home / "landing" / ".landed.json").exists()
