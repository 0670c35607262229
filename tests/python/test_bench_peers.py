"""`lakehouse bench --peers` compares like with like: on a generated table and
batch, this project's silver table ends equal to the truth computed here from
the change files, and to the table the hand-written Glue-MERGE-style job
(written independently in the benchmark) produces; dbt-spark's built-in merge
really merges into the existing table, round after round (each round a new
batch applied by every contender). The figures themselves are not
asserted (a benchmark, not a timed test)."""

from __future__ import annotations

import argparse
import csv
import statistics

import pytest
from lakehouse_cdc.bench_peers import (
    OTHER_STEP,
    OUTSIDE_STEP,
    STEPS,
    bench_size,
    bench_sources,
    report,
    sources_report,
)

#: in a whole-suite run, in a child session in the background (conftest.py)
pytestmark = pytest.mark.child_session


def test_peers_apply_the_same_batch_to_the_same_result(spark, tmp_path):
    args = argparse.Namespace(changes=80, repeat_rate=0.1, freshness=1, seed=3, rounds=2)
    result = bench_size(spark, 1_500, args, tmp_path)
    assert result.batch_rows == 88  # 80 changes, 8 of them twice
    # two rounds: each contender applied both batches, each timed
    assert {name: len(times) for name, times in result.rounds.items()} == {
        "project": 2, "project_wall": 2, "builtin": 2, "glue": 2, "floor": 2}
    assert result.same_as_glue, "project and Glue-style job disagree after the same batches"
    assert result.builtin_merged, "dbt-spark's built-in merge rebuilt instead of merging"

    live = _live_keys(tmp_path / "landing_1500" / "retail" / "orders", 1_500)
    # the generated changes are a source database's: an update or delete of a
    # row it holds, an insert of one it does not, in the order written
    held = set(range(1, 1_501))
    for path in sorted((tmp_path / "landing_1500" / "retail" / "orders").glob("2025*.csv")):
        with path.open() as handle:
            for row in csv.DictReader(handle):
                key = int(row["order_id"])
                assert (key in held) == (row["Op"] != "I"), (path.name, row)
                (held.discard if row["Op"] == "D" else held.add)(key)
    assert held == live
    stored = {r[0] for r in spark.sql(
        "select order_id from peers_1500_silver.slv_retail__orders").collect()}
    assert stored == live, (sorted(stored - live)[:5], sorted(live - stored)[:5])

    # landing to silver and SCD2: the product table's one timed small file
    # applied by the follower, its history up to date with it: per product, versions in
    # the order of the files (the load, then each update), the last current
    assert len(result.freshness_history) == 1 and result.freshness_history[0] > 0
    # its time split by model: both ran statements, within the file's time
    [(silver_s, history_s)] = result.history_split
    assert silver_s > 0 and history_s > 0, result.history_split
    assert silver_s + history_s < result.freshness_history[0], result
    prices: dict[int, list[str]] = {}
    folder = tmp_path / "landing_1500" / "retail" / "product"
    for path in sorted(folder.glob("*.csv"), key=lambda p: (p.name[:4] != "LOAD", p.name)):
        with path.open() as handle:
            for row in csv.DictReader(handle):
                prices.setdefault(int(row["product_id"]), []).append(row["unit_price"])
    # the load, one untimed file, the timed one: 10 updates each
    assert len(prices) == 1_500 and sum(len(v) for v in prices.values()) == 1_520
    versions: dict[int, list[str]] = {}
    for row in spark.sql("select product_id, cast(unit_price as string) as price, is_current "
                         "from peers_1500_dimensions.dim_product where product_id is not null "
                         "order by product_id, rec_eff_dt").collect():
        versions.setdefault(row.product_id, []).append(row.price)
        assert row.is_current == (len(versions[row.product_id])
                                  == len(prices[row.product_id])), row
    assert versions == {key: [f"{float(p):.2f}" for p in v] for key, v in prices.items()}

    # every round of the project timed by step: its statements all named and
    # counted, the batch written, merged and recorded once each, and within
    # the model's own time
    assert len(result.steps) == 2
    for steps, seconds in zip(result.steps, result.rounds["project"], strict=True):
        assert set(steps) <= {name for name, _ in STEPS} | {OTHER_STEP, OUTSIDE_STEP}, steps
        for name in ("batch with its outcomes (scratch)", "MERGE (or insert) into the table",
                     "file log", "run audit", "counts"):
            assert steps.get(name, [0])[0] == 1, (name, steps)
        # the batch's deletes recorded, and expired tombstones looked for
        assert steps.get("tombstones", [0])[0] == 2, steps
        assert steps[OUTSIDE_STEP][1] >= 0, (seconds, steps)  # the statements fit in its time
        assert steps[OTHER_STEP][0] > 0

    # the follower's one turn timed by step too: its dbt run's statements,
    # the hook's listing among them, the small file parsed, ranked with its
    # outcomes in one write, merged and recorded once each, within its latency
    assert len(result.follow_steps) == len(result.freshness) == 1
    turn = result.follow_steps[0]
    for name in ("CSV records written (scratch)", "batch with its outcomes (scratch)",
                 "MERGE (or insert) into the table", "file log", "run audit", "counts"):
        assert turn.get(name, [0])[0] == 1, (name, turn)
    assert "batch ranked (scratch)" not in turn, turn  # a small batch is ranked in its one write
    assert turn[OTHER_STEP][0] > 0
    # and its Spark jobs counted: the CSV records in two (one broadcast of
    # the files' block offsets, shared by both kinds of record, and the
    # write), the MERGE in one; of the two scratch views only the batch's
    # reads its files' schema (the records' view is given its columns)
    assert turn["CSV records written (scratch)"][2] == 2, turn
    assert turn["MERGE (or insert) into the table"][2] == 1, turn
    assert turn["scratch views"][:3:2] == [2, 1], turn
    # the rest is the hook's listing and statements without a job: the
    # listing's one query, the check for files gone in it (a full join of
    # the listing and the logs, each shuffled once), in 6 jobs (10 when the
    # check was a branch of its own, 7 before the check; Spark 3.5, adaptive
    # execution on in the hook, each query stage a job)
    assert turn[OTHER_STEP][2] == 6, turn
    assert 0 <= turn[OUTSIDE_STEP][1] < result.freshness[0], (result.freshness, turn)

    # the full load by step: parsed, ranked with its outcomes and inserted in
    # one write each, recorded once; within its time
    load = result.full_load_steps
    for name in ("CSV records written (scratch)", "batch with its outcomes (scratch)",
                 "MERGE (or insert) into the table", "file log", "run audit", "counts"):
        assert load.get(name, [0])[0] == 1, (name, load)
    assert "batch ranked (scratch)" not in load and "key list" not in load, load
    assert 0 <= load[OUTSIDE_STEP][1] < result.full_load, (result.full_load, load)
    # the first run's table is created empty: its outcomes do not read it
    # (one Spark job less: its scan and broadcast)
    assert load["batch with its outcomes (scratch)"][2] == 2, load

    text = report([result], None, argparse.Namespace(changes=80, repeat_rate=0.1))
    assert f"| the full load | {result.full_load:.2f} |" in text, text
    merge = statistics.median(s["MERGE (or insert) into the table"][1] for s in result.steps)
    merge_jobs = statistics.median(s["MERGE (or insert) into the table"][2] for s in result.steps)
    assert f"| MERGE (or insert) into the table | {merge:.2f} (1 / {merge_jobs:g}) |" in text
    follow_merge = turn["MERGE (or insert) into the table"][1]
    assert f"| MERGE (or insert) into the table | {follow_merge:.2f} (1 / 1) |" in text, text
    assert f"| landing to silver (`follow`, median) | {result.freshness[0]:.2f} |" in text, text
    history = result.freshness_history[0]
    assert f"| {history:.1f} | {history:.1f} (1) |" in text, text
    assert (f"landing to both visible {history:.2f} s, of which the statements of "
            f"slv_retail__product {silver_s:.2f} s and of dim_product {history_s:.2f} s") in text
    low, high = min(result.rounds["project"]), max(result.rounds["project"])
    assert f"| 1,500 | 88 | {result.project:.1f} ({low:.1f}-{high:.1f}) |" in text, text
    assert "--rounds 2" in text and "the median of 2 rounds" in text
    # the sample's builds alone (`--sizes ""`): no empty tables of sizes
    text = report([], (120.0, 21.5, 16.3), argparse.Namespace(changes=80, repeat_rate=0.1))
    assert "| table rows |" not in text
    assert "nothing landed 21.5s, and 16.3s without the unit tests" in text


def test_sources_run_applies_the_new_files_of_each_table(spark, schema, tmp_path):
    """The many-sources run: generated tables (add-table), a change file in one
    of three applied by `dbt run`, then another by a warm follower; each
    table ends with the keys its own files say."""
    result = bench_sources(3, 1, 200, 5, tmp_path, schema=schema)
    assert result.follow_files == 1  # the follower applied the one new file, in its one turn
    landing = tmp_path / "sources_3_landing" / "fleet"
    for i in range(3):
        live = _live_keys(landing / f"t{i:03d}", 200)
        assert (live != set(range(1, 201))) == (i == 0)
        stored = {r[0] for r in spark.sql(
            f"select order_id from {schema}_silver.slv_fleet__t{i:03d}").collect()}
        assert stored == live, (i, sorted(stored ^ live)[:5])
    text = sources_report([result], 200)
    assert "| 3 | 1 |" in text


def _live_keys(folder, rows: int) -> set[int]:
    """The truth: the full load's keys 1..rows, then each key's last change
    (by commit time and change sequence) in the folder's change files."""
    last: dict[int, tuple[tuple[str, str], str]] = {}
    for path in sorted(folder.glob("2025*.csv")):
        with path.open() as handle:
            for row in csv.DictReader(handle):
                order = (row["dms_commit_ts"], row["AR_H_CHANGE_SEQ"])
                key = int(row["order_id"])
                if key not in last or order > last[key][0]:
                    last[key] = (order, row["Op"])
    if last:
        assert any(op == "D" for _, op in last.values())
    live = set(range(1, rows + 1)) | {k for k, (_, op) in last.items() if op != "D"}
    return live - {k for k, (_, op) in last.items() if op == "D"}
