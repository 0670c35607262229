"""`lakehouse run`: the main job on the embedded default.

Generates the deterministic sample change files (once), lands the batches not
landed yet into the bronze landing folder, runs `dbt build` in-process on the
local Spark + Iceberg warehouse, and prints a per-table run summary and where
everything is.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lakehouse_cdc.home import lakehouse_home


@dataclass(frozen=True)
class RunOptions:
    scale: int = 300
    batches: int = 3
    seed: int = 42
    step: bool = False
    fresh: bool = False
    schema: str = "lakehouse"
    select: str | None = None
    format: str = "csv"


def _say(message: str) -> None:
    print(f"[lakehouse] {message}", flush=True)


def _prepare_sample(home: Path, options: RunOptions) -> tuple[Path, int]:
    """Generate the sample once; return its folder and number of batches."""
    from lakehouse_cdc.simulator import SimulationConfig, read_manifest, simulate

    sim_dir = home / "sample"
    wanted = {"seed": options.seed, "scale": options.scale, "batches": options.batches}
    if options.format != "csv":  # samples stamped before --format existed are CSV
        wanted["format"] = options.format
    stamp = sim_dir / ".lakehouse-sample.json"
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        _say(f"sample change files already generated in {sim_dir}")
    else:
        if stamp.exists():
            raise SystemExit(
                f"{sim_dir} holds a sample made with other settings "
                f"({stamp.read_text().strip()}); rerun with --fresh to start over"
            )
        _say(f"generating sample change files ({options.format}, seed {options.seed}, "
             f"scale {options.scale}, {options.batches} CDC batches) in {sim_dir}")
        config = SimulationConfig(out=sim_dir, seed=options.seed, scale=options.scale,
                                  batches=options.batches, format=options.format)
        simulate(config, overwrite=True)
        stamp.write_text(json.dumps(wanted))
    manifest = read_manifest(sim_dir)
    return sim_dir, len(manifest["batches"])


def _landed(landing: Path) -> list[int]:
    record = landing / ".landed.json"
    return json.loads(record.read_text()) if record.exists() else []


def _land(sim_dir: Path, landing: Path, batch: int) -> int:
    from lakehouse_cdc.simulator import land_batch

    files = land_batch(sim_dir, landing, batch)
    record = landing / ".landed.json"
    record.write_text(json.dumps(sorted({*_landed(landing), batch})))
    return len(files)


def run_summary(spark: Any, schema: str, since: float) -> list[dict[str, Any]]:
    """Audit rows of the CDC models written since `since` (epoch seconds).
    `spark` is a SparkSession or, on the cluster target, a ThriftTables."""
    table = f"{schema}_silver.cdc_run_audit"
    thrift = getattr(spark, "kind", "") == "pandas"
    exists = (spark.table_exists(f"{schema}_silver", "cdc_run_audit") if thrift
              else spark.catalog.tableExists(table))
    if not exists:
        return []
    query = (
        f"select model_name, sum(files_read) files, sum(rows_read) read, "
        f"sum(rows_applied) applied, sum(rows_superseded) superseded, "
        f"sum(rows_quarantined) quarantined, coalesce(sum(files_ignored), 0) ignored, "
        f"coalesce(sum(files_held), 0) held, max_by(snapshot_id, finished_at) snapshot "
        f"from {table} where finished_at >= timestamp_millis({int(since * 1000)}) "
        f"group by model_name order by model_name"
    )
    return spark.sql(query) if thrift else [r.asDict() for r in spark.sql(query).collect()]


def file_report(spark: Any, schema: str, since: float) -> list[dict[str, Any]]:
    """Per file logged since `since`: rows in the file, read, applied,
    superseded, quarantined, or ignored (not a data file), and the Debezium
    lines skipped as not changes (schema-change events, `null` tombstones)."""
    table = f"{schema}_silver.cdc_file_log"
    if not spark.catalog.tableExists(table):
        return []
    rows = spark.sql(
        f"select model_name, file_path, status, rows_in_file, row_count as read, rows_applied, "
        f"rows_superseded, rows_quarantined, coalesce(events_skipped, 0) as events_skipped "
        f"from {table} "
        f"where applied_at >= timestamp_millis({int(since * 1000)}) order by model_name, file_path"
    ).collect()
    return [r.asDict() for r in rows]


def _table(title: str, header: tuple[str, ...], body: list[tuple]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body, strict=True)]
    line = "  ".join(f"{{:<{w}}}" if i < 2 else f"{{:>{w}}}" for i, w in enumerate(widths))
    print(f"\n{title}")
    print(line.format(*header))
    for row in body:
        print(line.format(*(str(x) for x in row)))


def print_summary(rows: list[dict[str, Any]], files: list[dict[str, Any]] | None = None) -> None:
    if not rows:
        _say("no CDC model ran")
        return
    if files:
        _table("Files (silver CDC apply)",
               ("table", "file", "status", "in file", "read", "applied", "superseded",
                "quarantined", "events skipped"),
               [(f["model_name"], unquote(f["file_path"].rsplit("/", 1)[-1]), f["status"],
                 "" if f["rows_in_file"] is None else f["rows_in_file"], f["read"],
                 f["rows_applied"], f["rows_superseded"], f["rows_quarantined"],
                 f["events_skipped"]) for f in files])
    _table("Run summary (silver CDC apply)",
           ("table", "files", "read", "applied", "superseded", "quarantined", "ignored", "held",
            "snapshot"),
           [(r["model_name"], r["files"], r["read"], r["applied"], r["superseded"],
             r["quarantined"], r["ignored"], r["held"], r["snapshot"]) for r in rows])
    print()


def run(options: RunOptions) -> int:
    from lakehouse_cdc.cluster import ClusterError, tables_for_target
    from lakehouse_cdc.dbt_runner import run_dbt
    from lakehouse_cdc.quality import load_suites, run_suites

    home = lakehouse_home()
    if options.fresh and os.environ.get("DBT_TARGET", "local") != "local":
        raise SystemExit("[lakehouse] --fresh deletes $LAKEHOUSE_HOME, which holds the running "
                         "cluster's catalog and warehouse: use another --schema instead, or "
                         "`lakehouse cluster down` and delete the folder yourself")
    if options.fresh and home.exists():
        _say(f"--fresh: removing {home}")
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    landing = home / "landing"
    landing.mkdir(exist_ok=True)
    os.environ.setdefault("LAKEHOUSE_LANDING", str(landing))
    os.environ["LAKEHOUSE_SCHEMA"] = options.schema

    sim_dir, n_batches = _prepare_sample(home, options)
    pending = [b for b in range(n_batches) if b not in _landed(landing)]
    started = time.time()
    target = os.environ.get("DBT_TARGET", "local")
    if target == "local":
        _say("starting Spark (local, Iceberg warehouse on disk)")
    # on another target dbt, the summary and the GX suites go through the Thrift server
    try:
        spark = tables_for_target()
    except ClusterError as error:
        raise SystemExit(f"[lakehouse] {error}") from None
    if target != "local":
        _say(f"target {target}: Spark Thrift server on port {spark.port}")
    build = ["build"] + (["--select", options.select] if options.select else [])
    rounds = [[b] for b in pending] if options.step else [pending]
    for batches in rounds:
        for batch in batches:
            count = _land(sim_dir, landing, batch)
            _say(f"landed batch {batch}: {count} file(s) into {landing}")
        _say("dbt " + " ".join(build))
        run_dbt(build, schema=options.schema, vars={"bronze_format": options.format},
                quiet=False)
    print_summary(run_summary(spark, options.schema, started),
                  file_report(spark, options.schema, started))
    _say("validating silver and gold with Great Expectations")
    report = run_suites(spark, load_suites(), options.schema, home / "quality")
    print(report.summary())
    if target == "local":
        _say(f"warehouse (Iceberg):   {home / 'warehouse'}")
        _say(f"metastore (Derby):     {home / 'metastore_db'}")
    else:
        _say("warehouse and catalog: the cluster's (lakehouse cluster status)")
    _say(f"landing ({options.format} change files): {landing}")
    _say("schemas: " + ", ".join(f"{options.schema}_{layer}" for layer in
                                 ("bronze", "silver", "snapshots", "dimensions", "gold")))
    _say("lineage: lakehouse dbt docs generate && dbt docs serve --profiles-dir profiles")
    if not report.passed:
        _say("FAILED: a Great Expectations suite is below its threshold (see above)")
        return 1
    _say(f"done in {time.time() - started:.0f}s ({json.dumps(asdict(options))})")
    return 0
