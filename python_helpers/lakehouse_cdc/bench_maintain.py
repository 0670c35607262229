"""`lakehouse bench --maintenance`: read time of silver and gold before and
after `lakehouse maintain`, after many small CDC batches (one build each).
Figures only: nothing here asserts a speed."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def _read_seconds(spark: Any, table: str, repeat: int) -> float:
    """Best of `repeat` full reads (every column of every row hashed)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        spark.sql(f"select sum(hash(*)) from {table}").collect()
        best = min(best, time.perf_counter() - started)
    return best


def _files(spark: Any, table: str) -> int:
    return int(spark.sql(f"select count(*) from {table}.files").collect()[0][0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lakehouse bench --maintenance",
        description="Land many small CDC batches with one dbt run each, then print the "
        "read time of every silver and gold table and its file count before and after "
        "`lakehouse maintain`. Uses its own warehouse under a temporary folder.")
    parser.add_argument("--scale", type=int, default=2_000, help="simulated customers")
    parser.add_argument("--batches", type=int, default=30, help="CDC batches, one dbt run each")
    parser.add_argument("--changes", type=int, default=200, help="changes per batch")
    parser.add_argument("--repeat", type=int, default=3, help="reads per table (best kept)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="lakehouse-bench-maint-") as tmp:
        root = Path(tmp)
        os.environ["LAKEHOUSE_HOME"] = str(root / "home")
        from lakehouse_cdc.dbt_runner import run_dbt
        from lakehouse_cdc.maintain import format_report, maintain
        from lakehouse_cdc.simulator import SimulationConfig, land_batch, simulate
        from lakehouse_cdc.spark import get_spark

        spark = get_spark()
        schema, sim, landing = "bench_maint", root / "sim", root / "landing"
        simulate(SimulationConfig(out=sim, seed=3, scale=args.scale, batches=args.batches,
                                  changes_per_batch=args.changes), overwrite=True)
        run_dbt(["seed"], schema=schema, vars={"landing_root": str(landing)})  # facts read seeds
        for batch in range(args.batches + 1):
            land_batch(sim, landing, batch)
            started = time.time()
            run_dbt(["run"], schema=schema, vars={"landing_root": str(landing)})
            print(f"[bench] batch {batch} built in {time.time() - started:.1f}s", flush=True)
        tables = [f"{schema}_{layer}.{t.name}" for layer in ("silver", "gold")
                  for t in spark.catalog.listTables(f"{schema}_{layer}")
                  if not t.isTemporary and t.tableType != "VIEW" and not t.name.startswith("cdc_")
                  and "__cdc_" not in t.name]
        before = {t: (_files(spark, t), _read_seconds(spark, t, args.repeat)) for t in tables}
        started = time.time()
        rows = maintain(schema)
        print(format_report(rows))
        print(f"[bench] maintenance took {time.time() - started:.1f}s")
        after = {t: (_files(spark, t), _read_seconds(spark, t, args.repeat)) for t in tables}
        print(f"\nFull read of each table after {args.batches} CDC batches, before and after "
              f"maintenance (best of {args.repeat})")
        print(f"{'table':<50}{'files':>14}{'read s before':>15}{'read s after':>14}")
        for table in tables:
            (f0, s0), (f1, s1) = before[table], after[table]
            print(f"{table:<50}{f0:>7}>{f1:<6}{s0:>15.3f}{s1:>14.3f}")
    return 0
