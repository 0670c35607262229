"""`lakehouse bench --maintenance`: read time of silver and gold before and
after `lakehouse maintain`, after many small CDC batches (one dbt run each).
Figures only: nothing here asserts a speed."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from lakehouse_cdc import PROJECT_ROOT


def _read_seconds(spark: Any, table: str, repeat: int) -> float:
    """Best of `repeat` full reads (every column of every row hashed)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        spark.sql(f"select sum(hash(*)) from {table}").collect()
        best = min(best, time.perf_counter() - started)
    return best


def _counts(spark: Any, table: str) -> tuple[int, int, int]:
    """(data files, delete files, snapshots) of the table's current state."""
    files = spark.sql(
        f"select count_if(content = 0), count_if(content <> 0) from {table}.files"
    ).collect()[0]
    snapshots = spark.sql(f"select count(*) from {table}.snapshots").collect()[0][0]
    return int(files[0]), int(files[1]), int(snapshots)


def _policy(time_travel_hours: float) -> dict[str, Any]:
    """The project's maintenance policy (vars.maintenance) with the bench's
    time-travel window in every entry that sets one."""
    doc = yaml.safe_load((PROJECT_ROOT / "dbt_project.yml").read_text()) or {}
    policy = {
        layer: dict(settings or {})
        for layer, settings in (doc.get("vars", {}).get("maintenance") or {}).items()
    }
    for layer, settings in policy.items():
        if layer == "default" or "time_travel_hours" in settings:
            settings["time_travel_hours"] = time_travel_hours
    return policy


def _machine() -> str:
    memory = ""
    try:
        kib = int(
            next(
                line
                for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")
            ).split()[1]
        )
        memory = f", {kib / 1048576:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    load = ", load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    return f"{platform.machine()}, {os.cpu_count()} cores{memory}{load}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lakehouse bench --maintenance",
        description="Land many small CDC batches with one `dbt run` of the whole project "
        "each, then print for every silver and gold table its data files, delete files, "
        "snapshots and full-read time before and after `lakehouse maintain`. Uses its own "
        "warehouse under a temporary folder.",
    )
    parser.add_argument("--scale", type=int, default=200, help="simulated customers (200)")
    parser.add_argument(
        "--batches",
        type=int,
        default=6,
        help="CDC batches after the full load, one dbt run each (6)",
    )
    parser.add_argument("--changes", type=int, default=40, help="changes per batch (40)")
    parser.add_argument("--repeat", type=int, default=3, help="reads per table, best kept (3)")
    parser.add_argument(
        "--time-travel-hours",
        type=float,
        default=0.0,
        help="time-travel window of the maintenance (default 0: every "
        "snapshot but the policy's last N expires, as if the batches "
        "were older than the project's window)",
    )
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
        dbt_vars = {"landing_root": str(landing)}
        simulate(
            SimulationConfig(
                out=sim,
                seed=3,
                scale=args.scale,
                batches=args.batches,
                changes_per_batch=args.changes,
            ),
            overwrite=True,
        )
        started_all = time.time()
        run_dbt(["seed"], schema=schema, vars=dbt_vars)  # facts read seeds
        for batch in range(args.batches + 1):
            land_batch(sim, landing, batch)
            started = time.time()
            run_dbt(["run"], schema=schema, vars=dbt_vars)
            print(f"[bench] batch {batch} built in {time.time() - started:.1f}s", flush=True)
        build_seconds = time.time() - started_all
        tables = [
            f"{schema}_{layer}.{t.name}"
            for layer in ("silver", "gold")
            for t in spark.catalog.listTables(f"{schema}_{layer}")
            if not t.isTemporary
            and t.tableType != "VIEW"
            and not t.name.startswith("cdc_")
            and "__cdc_" not in t.name
        ]
        before = {t: (_counts(spark, t), _read_seconds(spark, t, args.repeat)) for t in tables}
        started = time.time()
        rows = maintain(schema, vars={**dbt_vars, "maintenance": _policy(args.time_travel_hours)})
        maintenance_seconds = time.time() - started
        print(format_report(rows))
        after = {t: (_counts(spark, t), _read_seconds(spark, t, args.repeat)) for t in tables}

        print(f"\n[bench] {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on {_machine()}")
        print(
            f"[bench] scale {args.scale}, full load + {args.batches} CDC batches of "
            f"{args.changes} changes, one `dbt run` each ({build_seconds:.0f}s in all); "
            f"maintenance {maintenance_seconds:.1f}s with a {args.time_travel_hours:g} h "
            "time-travel window"
        )
        print(f"Full read of each table (best of {args.repeat}), before > after maintenance")
        print(f"{'table':<46}{'data files':>12}{'deletes':>10}{'snapshots':>11}{'read s':>16}")
        totals = [0.0, 0.0]
        for table in tables:
            ((d0, x0, s0), r0), ((d1, x1, s1), r1) = before[table], after[table]
            totals[0] += r0
            totals[1] += r1
            print(f"{table:<46}{d0:>6}>{d1:<5}{x0:>5}>{x1:<4}{s0:>5}>{s1:<5}{r0:>8.3f}>{r1:.3f}")
        print(f"{'all tables read':<46}{'':>38}{totals[0]:>8.3f}>{totals[1]:.3f}")
    return 0
