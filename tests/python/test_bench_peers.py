"""`lakehouse bench --peers` compares like with like: on a generated table and
batch, this project's silver table ends equal to the truth computed here from
the change files, and to the table the hand-written Glue-MERGE-style job
(written independently in the benchmark) produces; dbt-spark's built-in merge
really merges into the existing table. The figures themselves are not
asserted (a benchmark, not a timed test)."""

from __future__ import annotations

import argparse
import csv

from lakehouse_cdc.bench_peers import bench_size, report


def test_peers_apply_the_same_batch_to_the_same_result(spark, tmp_path):
    args = argparse.Namespace(changes=80, repeat_rate=0.1, freshness=1, seed=3)
    result = bench_size(spark, 1_500, args, tmp_path)
    assert result.batch_rows == 88  # 80 changes, 8 of them twice
    assert result.same_as_glue, "project and Glue-style job disagree on the same batch"
    assert result.builtin_merged, "dbt-spark's built-in merge rebuilt instead of merging"

    # the truth: the full load's keys, then each key's last change in the files
    last: dict[int, tuple[tuple[str, str], str]] = {}
    folder = tmp_path / "landing_1500" / "retail" / "orders"
    for path in sorted(folder.glob("2025*.csv")):
        with path.open() as handle:
            for row in csv.DictReader(handle):
                order = (row["dms_commit_ts"], row["AR_H_CHANGE_SEQ"])
                key = int(row["order_id"])
                if key not in last or order > last[key][0]:
                    last[key] = (order, row["Op"])
    live = set(range(1, 1_501)) | {k for k, (_, op) in last.items() if op != "D"}
    live -= {k for k, (_, op) in last.items() if op == "D"}
    assert any(op == "D" for _, op in last.values())
    stored = {r[0] for r in spark.sql(
        "select order_id from peers_1500_silver.slv_retail__orders").collect()}
    assert stored == live, (sorted(stored - live)[:5], sorted(live - stored)[:5])

    text = report([result], None, argparse.Namespace(changes=80, repeat_rate=0.1))
    assert "| 1,500 | 88 |" in text
