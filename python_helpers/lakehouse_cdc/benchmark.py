"""`lakehouse bench`: does an incremental run cost follow the change volume?

Builds the silver models over two simulated databases of different sizes,
then applies one CDC batch of the same size to each and prints, per model,
the rows in the table, the rows in the batch and the seconds dbt spent on the
incremental run. Figures only: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def _bench_one(spark: Any, scale: int, changes: int, schema: str, root: Path) -> list[dict]:
    from lakehouse_cdc.dbt_runner import run_dbt
    from lakehouse_cdc.simulator import SimulationConfig, land_batch, simulate

    sim = root / f"sim_{scale}"
    landing = root / f"landing_{scale}"
    print(f"[bench] simulating scale {scale} with a batch of {changes} changes", flush=True)
    simulate(SimulationConfig(out=sim, seed=1, scale=scale, batches=1, changes_per_batch=changes,
                              load_file_rows=200_000), overwrite=True)
    args = {"schema": schema, "vars": {"landing_root": str(landing)}}
    land_batch(sim, landing, 0)
    started = time.time()
    run_dbt(["run", "--select", "tag:silver"], **args)
    print(f"[bench] full load applied in {time.time() - started:.1f}s", flush=True)
    land_batch(sim, landing, 1)
    result = run_dbt(["run", "--select", "tag:silver"], **args)
    rows = []
    for node in result.result.results:
        name = node.node.name
        config = node.node.config
        if node.node.resource_type != "model" or config.get("materialized") != "incremental":
            continue  # hooks and views over silver: nothing applied
        audit = spark.sql(
            f"select rows_read from {schema}_silver.cdc_run_audit where model_name = '{name}' "
            f"order by finished_at desc limit 1").collect()[0]
        size = spark.table(f"{schema}_silver.{name}").count()
        rows.append({"scale": scale, "model": name, "table_rows": size,
                     "batch_rows": audit.rows_read, "seconds": node.execution_time})
    return rows


def main(argv: list[str] | None = None) -> int:
    if argv and "--peers" in argv:  # the project against its peers on one batch
        from lakehouse_cdc.bench_peers import main as peers_main

        return peers_main([a for a in argv if a != "--peers"])
    if argv and "--maintenance" in argv:  # read time before/after table maintenance
        from lakehouse_cdc.bench_maintain import main as maintenance_main

        return maintenance_main([a for a in argv if a != "--maintenance"])
    parser = argparse.ArgumentParser(
        prog="lakehouse bench",
        description="Time one incremental CDC batch of the same size against two table "
        "sizes. Prints figures; uses its own warehouse under a temporary folder.")
    parser.add_argument("--small", type=int, default=5_000, help="scale of the small database")
    parser.add_argument("--large", type=int, default=100_000, help="scale of the large database")
    parser.add_argument("--changes", type=int, default=500, help="changes in the measured batch")
    parser.add_argument("--peers", action="store_true",
                        help="instead: this project against dbt-spark's merge, a hand-written "
                        "job and a plain append on one batch (`lakehouse bench --peers --help`)")
    parser.add_argument("--maintenance", action="store_true",
                        help="instead: read times before/after `lakehouse maintain` "
                        "(`lakehouse bench --maintenance --help`)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="lakehouse-bench-") as tmp:
        root = Path(tmp)
        os.environ["LAKEHOUSE_HOME"] = str(root / "home")
        from lakehouse_cdc.spark import get_spark

        spark = get_spark()
        print("[bench] warm-up run (JIT, caches), not reported", flush=True)
        _bench_one(spark, 100, min(args.changes, 50), "bench_warmup", root)
        results = []
        for scale in (args.small, args.large):
            results += _bench_one(spark, scale, args.changes, f"bench_{scale}", root)
        print("\nIncremental run, same batch size, two table sizes")
        print(f"{'model':<30}{'table rows':>12}{'batch rows':>12}{'seconds':>10}")
        for row in sorted(results, key=lambda r: (r["model"], r["scale"])):
            print(f"{row['model']:<30}{row['table_rows']:>12}{row['batch_rows']:>12}"
                  f"{row['seconds']:>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
