"""`lakehouse bench --peers`: this project's CDC apply against its peers, on the
same batch, in one Spark process.

Per table size (rows of the silver `orders` table, `--sizes`):

1. a DMS full-load file of that many rows is written and applied by the
   project (`slv_retail__orders`; the project parsed before, untimed, as
   any run after a project's first is); a typed insert of the same file
   into an Iceberg table is the full-load reference;
2. three copies of the silver table are made (untimed);
3. `--rounds` times: one DMS CDC file of `--changes` distinct changes
   (updates, inserts, deletes) plus `--repeat-rate` of them changed a second
   time is landed, and that batch goes, one contender at a time, to:
   - **project**: `dbt run` of `slv_retail__orders` (its `cdc_merge`: file
     listing, validation, dedup, late-change guard, quarantine, tombstones,
     file log, audit);
   - **built-in merge**: dbt-spark's own `merge` strategy (a dbt model with
     `incremental_strategy='merge'`) on the batch deduplicated beforehand
     (untimed), so with no deletes and no ordering of its own;
   - **Glue-MERGE-style job**: a hand-written PySpark job as in the AWS
     example: read the file, keep the last change per key (window),
     `MERGE` with `when matched and Op = 'D' then delete`;
   - **append floor**: a plain append of the batch's rows;
   each contender applies every round's batch to its own table; the order
   of the contenders turns by one each round, so that none is always the
   first after the untimed work or the last in a slowing machine. A figure
   is the median of the rounds, with their range: this machine's repeated
   runs of one command spread by a third (2026-12-03, `sum(range(10**8))`
   1.5-2.2 s: the project's run of the same batch 6.2-9.9 s in five
   processes), so one round is not a figure;
4. the project's and the hand-written job's tables are compared (same rows:
   both apply the same changes), and `--freshness` small files are landed
   one at a time, each applied by a warm `lakehouse follow` (its Follower, in
   this process): the time from landing to the change visible in silver;
5. a `product` table of the same size and its SCD2 history (`dim_product`)
   are built (untimed), and, after one untimed, as many small files of
   updates are landed in it, each applied by a warm follower of the product's model, whose turn
   also brings the history up to date: landing to visible in silver and the
   SCD2 history, issue #13's `follow` target.

Before the first size (unless `--cold`), an untimed warm-up applies a full
load and a batch of 20,000 rows with the project and makes a typed insert:
the figures then do not include the JVM's class loading and JIT compilation.
Then, unless `--no-sample`, the sample project (`lakehouse run`'s data) is
built once and `dbt build` timed again with nothing landed, with and
without the unit tests (production builds leave them out). With `--sources
5,200`, a project per count is generated with that many source tables
(`lakehouse add-table` on small full-load files), run once, and its `dbt
run` timed again after a CDC file landed in `--changed` of them: a run's cost
against the number of sources it has, most with nothing new. Then a warm
`lakehouse follow` (caught up first, untimed) applies one more file in each of
those: it runs only the models whose folders changed. Figures are
printed as a Markdown report (ratios included) and plotted (time against
table size per contender, PNG). The report also says where the project's
batch went: every statement of its rounds timed and named by the step of
macros/cdc that runs it (STEPS), and the model's time outside them (dbt's
Jinja and Python). Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import random
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakehouse_cdc import PROJECT_ROOT, copy_project

MODEL = "slv_retail__orders"
STATUSES = ["PLACED", "SHIPPED", "DELIVERED", "CANCELLED"]
HEADER = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "order_id", "customer_id", "order_ts",
          "status", "row_audit_ts"]
TS = "%Y-%m-%d %H:%M:%S.%f"
#: the model whose `follow` turns also bring an SCD2 history up to date, and that history
HISTORY_MODEL, HISTORY = "slv_retail__product", "dim_product"
PRODUCT_HEADER = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "product_id", "product_name",
                  "category", "unit_price", "row_audit_ts"]
CATEGORIES = ["tools", "garden", "kitchen", "toys", "books"]
#: the stride between the new order ids of successive change files
NEW_KEYS_PER_BATCH = 10_000_000
#: the contenders, in the order of the first round
CONTENDERS = ("project", "builtin", "glue", "floor")
BASE = dt.datetime(2025, 1, 1)

#: dbt-spark's built-in merge, as an analyst would configure it
BUILTIN_MODEL = """{{ config(materialized='incremental', incremental_strategy='merge',
                      unique_key='order_id', file_format='iceberg', schema='peers') }}
select * from {{ var('batch_table') }}
"""
#: with the project's relation listing (macros/adapters), so that dbt-spark
#: sees the existing Iceberg table and merges into it
BUILTIN_PROJECT = """name: bench_peers
version: "0.1.0"
config-version: 2
profile: lakehouse_cdc
model-paths: ["models"]
macro-paths: ["{macros}"]
flags:
  send_anonymous_usage_stats: false
"""


@dataclass
class SizeResult:
    rows: int
    full_load: float = 0.0
    typed_insert: float = 0.0
    project: float = 0.0
    project_wall: float = 0.0
    builtin: float = 0.0
    glue: float = 0.0
    floor: float = 0.0
    batch_rows: int = 0
    same_as_glue: bool = False
    builtin_merged: bool = False
    freshness: list[float] = field(default_factory=list)
    #: landing to visible in silver and its SCD2 history (`product`, dim_product)
    freshness_history: list[float] = field(default_factory=list)
    #: each of those turns: the seconds of the silver model's statements and
    #: of the history's (the rest: the hook, dbt, the wait to see the file)
    history_split: list[tuple[float, float]] = field(default_factory=list)
    #: every round's seconds, by contender (project, project_wall, builtin,
    #: glue, floor); the fields of the same names hold their medians
    rounds: dict[str, list[float]] = field(default_factory=dict)
    #: the project's rounds by step (_step_of): [statements, seconds, Spark jobs] of each
    steps: list[dict[str, list[float]]] = field(default_factory=list)
    #: the same of each `follow` turn, every statement of its dbt run (the
    #: on-run-start hook's too); outside them, the rest of its latency
    follow_steps: list[dict[str, list[float]]] = field(default_factory=list)
    #: the same of the full load: every statement of its `dbt run` (the first
    #: staging of the source by the on-run-start hook too)
    full_load_steps: dict[str, list[float]] = field(default_factory=dict)

    def spread(self, name: str) -> str:
        """The range of `name`'s rounds, e.g. ' (5.9-8.8)'; '' for one round."""
        values = self.rounds.get(name, [])
        return f" ({min(values):.1f}-{max(values):.1f})" if len(values) > 1 else ""


def _ts(seconds: float) -> str:
    return (BASE + dt.timedelta(seconds=seconds)).strftime(TS)


def _seq(n: int) -> str:
    return f"{20250102000000000000000000000000000 + n:035d}"


def write_load_file(spark: Any, rows: int, folder: Path) -> Path:
    """A DMS full-load CSV (header, Op included) of `rows` orders, written by Spark."""
    return _write_load(spark, rows, folder, [
        "id as order_id", "id % 100000 + 1 as customer_id",
        "date_format(timestamp'2024-06-01 00:00:00' + make_dt_interval(0, 0, 0, id % 9000000), "
        "'yyyy-MM-dd HH:mm:ss.SSSSSS') as order_ts",
        f"element_at(array({', '.join(repr(s) for s in STATUSES)}), cast(id % 4 + 1 as int)) "
        "as status"])


def write_product_load_file(spark: Any, rows: int, folder: Path) -> Path:
    """A DMS full-load CSV of `rows` products (the sample's `product` table)."""
    return _write_load(spark, rows, folder, [
        "id as product_id", "concat('product ', id) as product_name",
        f"element_at(array({', '.join(repr(s) for s in CATEGORIES)}), "
        f"cast(id % {len(CATEGORIES)} + 1 as int)) as category",
        "cast(cast(id % 10000 / 100 + 1 as decimal(10, 2)) as string) as unit_price"])


def _write_load(spark: Any, rows: int, folder: Path, columns: list[str]) -> Path:
    """A DMS full-load CSV of ids 1..rows: Op, the commit time and sequence,
    `columns` (SQL over `id`), then row_audit_ts."""
    tmp = folder.parent / f".{folder.name}.load"
    (spark.range(1, rows + 1).selectExpr(
        "'I' as Op", "'2025-01-01 00:00:00.000000' as dms_commit_ts",
        "cast(null as string) as AR_H_CHANGE_SEQ", *columns,
        "'2024-12-31 00:00:00.000000' as row_audit_ts")
     .coalesce(1).write.mode("overwrite").option("header", True).option("lineSep", "\n")
     .csv(str(tmp)))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "LOAD00000001.csv"
    shutil.move(str(next(tmp.glob("part-*.csv"))), path)
    shutil.rmtree(tmp)
    return path


def write_change_file(path: Path, rows: int, changes: int, repeat_rate: float, start: int,
                      seed: int, deleted: set[int] | None = None) -> int:
    """A DMS CDC CSV: `changes` distinct keys changed (80% updates, 10% deletes
    of existing orders, 10% new orders), `repeat_rate` of them a second time
    later (a deleted order inserted again). `deleted`: the orders of the full
    load that the earlier files of the same table left deleted, updated here
    with this file's: none of them is updated or deleted again, as a source
    database never sends a change of a row it does not hold. Returns the rows
    written."""
    rng = random.Random(seed)
    deleted = set() if deleted is None else deleted
    wanted = min(rows - len(deleted), int(changes * 0.9))
    existing = [key for key in rng.sample(range(1, rows + 1), min(rows, wanted + len(deleted)))
                if key not in deleted][:wanted]
    # (each batch's new orders in their own range: a later batch's are new too)
    first_new = rows + start * NEW_KEYS_PER_BATCH + 1
    new = list(range(first_new, first_new + changes - len(existing)))
    plan = [("U" if i % 9 else "D", key) for i, key in enumerate(existing)]
    plan += [("I", key) for key in new]
    rng.shuffle(plan)
    repeats = [(("U" if op != "D" else "I"), key) for op, key in
               rng.sample(plan, int(len(plan) * repeat_rate))]
    for op, key in plan + repeats:
        if key <= rows:
            (deleted.add if op == "D" else deleted.discard)(key)
    lines = [",".join(HEADER)]
    for n, (op, key) in enumerate(plan + repeats):
        at = _ts(86400 + start * 3600 + n * 0.001)
        lines.append(",".join([op, at, _seq(start * 10_000_000 + n), str(key),
                               str(key % 100000 + 1), at, STATUSES[(key + n) % 4], at]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return len(lines) - 1


def _typed_batch(spark: Any, path: Path) -> Any:
    return spark.read.option("header", True).schema(
        "Op string, dms_commit_ts timestamp, AR_H_CHANGE_SEQ decimal(38,0), order_id bigint, "
        "customer_id bigint, order_ts timestamp, status string, row_audit_ts timestamp"
    ).csv(str(path))


def glue_style_job(spark: Any, path: Path, table: str) -> None:
    """The hand-written job: last change per key, then one MERGE with deletes."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    last = Window.partitionBy("order_id").orderBy(F.col("dms_commit_ts").desc(),
                                                  F.col("AR_H_CHANGE_SEQ").desc())
    (_typed_batch(spark, path).withColumn("_n", F.row_number().over(last))
     .where("_n = 1").drop("_n").createOrReplaceTempView("glue_batch"))
    spark.sql(f"""
        merge into {table} t using glue_batch s on t.order_id = s.order_id
        when matched and s.Op = 'D' then delete
        when matched then update set t.customer_id = s.customer_id, t.order_ts = s.order_ts,
            t.order_date = cast(s.order_ts as date), t.status = upper(trim(s.status)),
            t.row_audit_ts = s.row_audit_ts, t._cdc_op = s.Op,
            t._cdc_commit_ts = s.dms_commit_ts, t._cdc_change_seq = s.AR_H_CHANGE_SEQ
        when not matched and s.Op <> 'D' then insert (order_id, customer_id, order_ts,
            order_date, status, row_audit_ts, _cdc_op, _cdc_commit_ts, _cdc_change_seq)
            values (s.order_id, s.customer_id, s.order_ts, cast(s.order_ts as date),
            upper(trim(s.status)), s.row_audit_ts, s.Op, s.dms_commit_ts, s.AR_H_CHANGE_SEQ)
    """)


def _dedup_batch(spark: Any, path: Path, table: str, columns: str) -> None:
    """What the built-in merge is given: the batch deduplicated beforehand
    (the last change per key), shaped as the silver table."""
    _typed_batch(spark, path).createOrReplaceTempView("peer_batch")
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"""
        create table {table} using iceberg as
        select {columns} from (
            select order_id, customer_id, order_ts, cast(order_ts as date) as order_date,
                upper(trim(status)) as status, row_audit_ts, Op as _cdc_op, 1 as _cdc_phase,
                dms_commit_ts as _cdc_commit_ts, AR_H_CHANGE_SEQ as _cdc_change_seq,
                '{path}' as _cdc_file, timestamp'2025-01-02 00:00:00' as _cdc_file_modified_at,
                0L as _cdc_row, current_timestamp() as _cdc_loaded_at, 'bench' as _cdc_run_id,
                row_number() over (partition by order_id
                                   order by dms_commit_ts desc, AR_H_CHANGE_SEQ desc) as _n
            from peer_batch) as ranked
        where _n = 1""")


def _copy(spark: Any, source: str, target: str) -> None:
    spark.sql(f"drop table if exists {target}")
    spark.sql(f"create table {target} using iceberg tblproperties ('format-version' = '2', "
              "'write.merge.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
              f"'write.delete.mode' = 'merge-on-read') as select * from {source}")


def _model_seconds(result: Any, name: str) -> float:
    return next(r.execution_time for r in result.result.results if r.node.name == name)


#: the steps of a CDC run (macros/cdc) the report names, each a pattern of
#: its statements (whitespace collapsed, dbt's comment removed), the first
#: that matches naming it
STEPS = [
    ("CSV records written (scratch)", r"^insert overwrite directory '[^']*/records' "),
    ("batch ranked (scratch)", r"^insert overwrite directory '[^']*/ranked' "),
    ("batch with its outcomes (scratch)", r"^insert overwrite directory '[^']*/rows' "),
    ("scratch emptied", r"^insert overwrite directory .* select 1 as emptied where false$"),
    ("key list", r" as key_literal, "),
    ("counts", r"^select _cdc_file as file, max\(modified\)"),
    ("quarantine", r"^(insert into|merge into) \S+\.cdc_quarantine\b"),
    ("tombstones", r"^((insert into|merge into|delete from|select count\(\*\) from) "
                   r"|select coalesce\(min\(_cdc_recorded_at\) .* from )"
                   r"\S+__cdc_(tombstones|horizon)\b"),
    ("MERGE (or insert) into the table",
     r"^(merge into|insert into) (?!\S+\.cdc_(file_log|run_audit|quarantine) )(?!\S+__cdc_)"),
    ("file log", r"^insert into \S+\.cdc_file_log\b"),
    ("run audit", r"^insert into \S+\.cdc_run_audit\b"),
    ("model's view", r"^create or replace temporary view \S+__dbt_tmp "),
    ("scratch views", r"^create or replace (global )?temporary view \S+ (\(.*\) )?using parquet "),
]
#: the name of the statements no step claims (catalog, settings, listing)
OTHER_STEP = "catalog, settings, file listing"
#: the model's time outside its statements: dbt's Jinja and Python (and in a
#: `follow` turn, the wait until the follower saw the file)
OUTSIDE_STEP = "outside the statements (dbt: Jinja, Python)"


def _step_of(sql: str) -> str:
    text = re.sub(r"\s+", " ", re.sub(r"/\*.*?\*/", " ", sql, count=1, flags=re.S)).strip().lower()
    for name, pattern in STEPS:
        if re.search(pattern, text):
            return name
    return OTHER_STEP


@contextmanager
def _statement_timer(node_id: str | None) -> Iterator[dict[str, list[float]]]:
    """Time every statement dbt-spark runs for `node_id` (None: for any node)
    while open: a dict of step name to [statements, seconds, Spark jobs],
    filled as they run. A query runs when its rows are fetched (dbt-spark's
    cursor makes a DataFrame and collects it later): the fetch counts in the
    step of its statement. Jobs are those Spark's scheduler started during
    the statement's calls (None where it cannot say)."""
    from dbt.adapters.spark import session as spark_session

    steps: dict[str, list[float]] = {}
    # each cursor's step, of the statement it ran last under this timer (a
    # fetch with no statement run under it counts nowhere)
    current: dict[int, str | None] = {}
    cursor_class = spark_session.Cursor
    originals = {name: getattr(cursor_class, name) for name in ("execute", "fetchall", "fetchone")}
    jobs = _jobs_started()

    def timed(name: str) -> Any:
        def call(cursor: Any, *args: Any) -> Any:
            jobs_before = jobs()
            started = time.time()
            try:
                return originals[name](cursor, *args)
            finally:
                seconds = time.time() - started
                if name == "execute":
                    sql = args[0]
                    current[id(cursor)] = (_step_of(sql) if node_id is None
                                           or f'"node_id": "{node_id}"' in sql else None)
                step = current.get(id(cursor))
                if step is not None:
                    counted = steps.setdefault(step, [0, 0.0, 0])
                    counted[0] += name == "execute"
                    counted[1] += seconds
                    started_jobs = jobs()
                    counted[2] = (None if None in (counted[2], started_jobs, jobs_before)
                                  else counted[2] + started_jobs - jobs_before)
        return call

    for name in originals:
        setattr(cursor_class, name, timed(name))
    try:
        yield steps
    finally:
        for name, original in originals.items():
            setattr(cursor_class, name, original)


def _jobs_started() -> Any:
    """A function of no argument: how many jobs the running Spark
    application's scheduler has started (None when it cannot say: no local
    SparkContext, or a Spark whose scheduler hides the count). One call into
    the JVM, under a millisecond."""
    try:
        from pyspark import SparkContext

        scheduler = SparkContext._active_spark_context._jsc.sc().dagScheduler()
        scheduler.numTotalJobs()
    except Exception:  # noqa: BLE001 (a count the benchmark prints, not a result)
        return lambda: None
    return scheduler.numTotalJobs


def warm_up(spark: Any, args: argparse.Namespace, root: Path) -> None:
    """Untimed, before the first size: the project's full load, a typed insert
    and one CDC batch on a table of 20,000 rows, so that no contender's figure
    is the JVM's class loading and JIT compilation of its code paths (the
    Glue-style job is also run once on each size before it is timed). Measured
    on 2026-11-26 at 1M rows: the project's full load took 36-44 s as the
    first work of a fresh JVM, 17-19 s when run again in the same one."""
    from lakehouse_cdc.dbt_runner import run_dbt

    rows, schema = 20_000, "peers_warm_up"
    landing = root / "landing_warm_up"
    folder = landing / "retail" / "orders"
    dbt_args = {"schema": schema, "vars": {"landing_root": str(landing)},
                "target_path": root / "target"}
    print(f"[bench --peers] warming up (untimed): {rows:,} rows", flush=True)
    load = write_load_file(spark, rows, folder)
    run_dbt(["run", "--select", MODEL], **dbt_args)
    spark.sql(f"create database if not exists {schema}_peers")
    _typed_batch(spark, load).writeTo(f"{schema}_peers.typed_load").using("iceberg") \
        .createOrReplace()
    write_change_file(folder / "20250102-000000001.csv", rows, rows // 10, args.repeat_rate, 1,
                      args.seed)
    run_dbt(["run", "--select", MODEL], **dbt_args)


def bench_size(spark: Any, rows: int, args: argparse.Namespace, root: Path) -> SizeResult:
    from lakehouse_cdc.dbt_runner import run_dbt

    out = SizeResult(rows)
    schema = f"peers_{rows}"
    landing = root / f"landing_{rows}"
    folder = landing / "retail" / "orders"
    dbt_args = {"schema": schema, "vars": {"landing_root": str(landing)},
                "target_path": root / "target"}
    silver = f"{schema}_silver.{MODEL}"
    say = lambda text: print(f"[bench --peers] {rows:,} rows: {text}", flush=True)  # noqa: E731

    say("writing the full-load file")
    load = write_load_file(spark, rows, folder)
    # the project parsed first, untimed: the size's schema is an environment
    # variable of the profile, and dbt parses the whole project again when
    # one changes (3.4 s against 0.2-0.4 s for a partial parse, 2026-12-06);
    # a project's runs after its first parse only what changed
    run_dbt(["parse"], **dbt_args)
    started = time.time()
    with _statement_timer(None) as steps:
        run_dbt(["run", "--select", MODEL], **dbt_args)
    out.full_load = time.time() - started
    steps[OUTSIDE_STEP] = [0, out.full_load - sum(step[1] for step in steps.values()), 0]
    out.full_load_steps = steps
    spark.sql(f"create database if not exists {schema}_peers")
    started = time.time()
    _typed_batch(spark, load).writeTo(f"{schema}_peers.typed_load").using("iceberg") \
        .createOrReplace()
    out.typed_insert = time.time() - started
    say(f"full load {out.full_load:.1f}s (typed insert of the same file "
        f"{out.typed_insert:.1f}s)")

    for peer in ("builtin", "glue"):
        _copy(spark, silver, f"{schema}_peers.{peer}")
    columns = ", ".join(f.name for f in spark.table(silver).schema)
    floor = f"{schema}_peers.floor"
    spark.sql(f"drop table if exists {floor}")
    builtin = _builtin_project(root)
    snapshots = f"select count(*) from {schema}_peers.builtin.snapshots"

    def project(batch: Path) -> float:
        started = time.time()
        with _statement_timer(f"model.lakehouse_cdc.{MODEL}") as steps:
            result = run_dbt(["run", "--select", MODEL], **dbt_args)
        out.rounds.setdefault("project_wall", []).append(time.time() - started)
        seconds = _model_seconds(result, MODEL)
        steps[OUTSIDE_STEP] = [0, seconds - sum(step[1] for step in steps.values()), 0]
        out.steps.append(steps)
        return seconds

    def builtin_merge(batch: Path) -> float:
        before = spark.sql(snapshots).collect()[0][0]
        result = run_dbt(["run", "--select", "builtin"], project_dir=builtin, schema=schema,
                         vars={"batch_table": f"{schema}_peers.batch_dedup"},
                         target_path=root / "target_builtin")
        # one more snapshot on the same table: dbt-spark merged (a rebuild starts a new history)
        merged.append(spark.sql(snapshots).collect()[0][0] == before + 1)
        return _model_seconds(result, "builtin")

    def glue(batch: Path) -> float:
        started = time.time()
        glue_style_job(spark, batch, f"{schema}_peers.glue")
        return time.time() - started

    def append_floor(batch: Path) -> float:
        started = time.time()
        _typed_batch(spark, batch).writeTo(floor).append()
        return time.time() - started

    apply = {"project": project, "builtin": builtin_merge, "glue": glue, "floor": append_floor}
    merged: list[bool] = []
    deleted: set[int] = set()  # the orders the change files left deleted
    for n in range(args.rounds):
        batch = folder / f"20250102-{n + 1:09d}.csv"
        out.batch_rows = write_change_file(batch, rows, args.changes, args.repeat_rate, n + 1,
                                           args.seed + n, deleted)
        if n == 0:  # untimed: the job's code paths, and the floor's empty table
            glue_style_job(spark, batch, f"{schema}_peers.glue")
            _copy(spark, silver, f"{schema}_peers.glue")
            _typed_batch(spark, batch).limit(0).writeTo(floor).using("iceberg").create()
        _dedup_batch(spark, batch, f"{schema}_peers.batch_dedup", columns)  # untimed
        order = CONTENDERS[n % len(CONTENDERS):] + CONTENDERS[:n % len(CONTENDERS)]
        say(f"round {n + 1} of {args.rounds}: applying {out.batch_rows:,} change rows: "
            + ", ".join(order))
        for name in order:
            out.rounds.setdefault(name, []).append(apply[name](batch))
    for name, values in out.rounds.items():
        setattr(out, name, statistics.median(values))
    out.builtin_merged = bool(merged) and all(merged)

    compared = "order_id, customer_id, order_ts, status, _cdc_commit_ts, _cdc_change_seq"
    out.same_as_glue = spark.sql(f"""
        select count(*) from (
            (select {compared} from {silver} except all
             select {compared} from {schema}_peers.glue)
            union all
            (select {compared} from {schema}_peers.glue except all
             select {compared} from {silver}))""").collect()[0][0] == 0

    # landing to visible, as `lakehouse follow` applies files: one warm follower
    # (the project parsed once), each small file renamed into the folder whole
    from lakehouse_cdc.follow import Follower, FollowOptions

    follower = Follower(spark, FollowOptions(
        schema=schema, select=MODEL, downstream="none", settle=0.0, interval=0.2,
        vars=dbt_args["vars"], target_path=dbt_args["target_path"]))
    follower.cycle(first=True)  # nothing new: what a follower does when it starts
    for k in range(args.freshness):
        small = folder / f"20250103-{k:09d}.csv"
        hidden = folder / f".{small.name}.tmp"  # names starting with "." are never listed
        start = args.rounds + 1 + k  # after every round's batch
        write_change_file(hidden, rows, 10, 0.0, start, args.seed + k, deleted)
        key = int(hidden.read_text().splitlines()[1].split(",")[3])
        hidden.rename(small)
        with _statement_timer(None) as steps:
            while not (done := follower.cycle()):
                time.sleep(follower.options.interval)
        seen = spark.sql(f"select max(_cdc_change_seq) from {silver} where order_id = {key}"
                         ).collect()[0][0]
        out.freshness.append(max(item.latency for item in done))
        steps[OUTSIDE_STEP] = [0, out.freshness[-1] - sum(step[1] for step in steps.values()),
                               0]
        out.follow_steps.append(steps)
        assert seen is None or seen >= int(_seq(start * 10_000_000)), "change not visible"
    out.freshness_history, out.history_split = follow_history(spark, rows, args, landing,
                                                              dbt_args, say)
    say(f"project {out.project:.1f}s, built-in {out.builtin:.1f}s, Glue-style {out.glue:.1f}s, "
        f"floor {out.floor:.1f}s; same rows as the Glue-style job: {out.same_as_glue}")
    return out


def write_product_change_file(path: Path, rows: int, changes: int, start: int, seed: int
                              ) -> dict[int, str]:
    """A DMS CDC CSV of `changes` price updates of distinct products of the
    full load (each price new: the history gets a version). Returns the new
    price of each product."""
    rng = random.Random(seed)
    prices = {}
    lines = [",".join(PRODUCT_HEADER)]
    for n, key in enumerate(rng.sample(range(1, rows + 1), min(rows, changes))):
        at = _ts(86400 + start * 3600 + n * 0.001)
        prices[key] = f"{1000 + start + n / 100:.2f}"  # above every load price (1-101)
        lines.append(",".join(["U", at, _seq(start * 10_000_000 + n), str(key), f"product {key}",
                               CATEGORIES[key % len(CATEGORIES)], prices[key], at]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return prices


def follow_history(spark: Any, rows: int, args: argparse.Namespace, landing: Path,
                   dbt_args: dict[str, Any], say: Any
                   ) -> tuple[list[float], list[tuple[float, float]]]:
    """Landing to visible in silver and its SCD2 history, as `lakehouse
    follow` applies files: a `product` table of `rows` rows and its history
    `dim_product` built first (untimed), then one small file of updates
    (untimed: the follower's first replace of the history) and `--freshness`
    more, landed one at a time, each applied by a warm follower of the
    product's model, whose turn also runs the history (its default
    downstream). None without `--freshness`. Returns each timed file's
    seconds, landing to both committed, and the seconds of its turn's
    statements of each model."""
    from lakehouse_cdc.dbt_runner import run_dbt
    from lakehouse_cdc.follow import Follower, FollowOptions

    if args.freshness < 1:
        return [], []
    folder = landing / "retail" / "product"
    say(f"the product table and its SCD2 history ({HISTORY}): full load, untimed")
    write_product_load_file(spark, rows, folder)
    run_dbt(["run", "--select", HISTORY_MODEL, f"{HISTORY_MODEL}_log", HISTORY], **dbt_args)
    follower = Follower(spark, FollowOptions(
        schema=dbt_args["schema"], select=HISTORY_MODEL, settle=0.0, interval=0.2,
        vars=dbt_args["vars"], target_path=dbt_args["target_path"]))
    follower.cycle(first=True)
    latencies, split = [], []
    # one file untimed first: the follower's first replace of the history
    # (its first MERGE in this JVM, and the table's write mode set once)
    for k in range(-1, args.freshness):
        small, start = folder / f"20250104-{k + 1:09d}.csv", args.rounds + 2 + k
        hidden = folder / f".{small.name}.tmp"  # names starting with "." are never listed
        prices = write_product_change_file(hidden, rows, 10, start, args.seed + k)
        hidden.rename(small)
        with (_statement_timer(f"model.lakehouse_cdc.{HISTORY_MODEL}") as silver,
              _statement_timer(f"model.lakehouse_cdc.{HISTORY}") as history):
            while not (done := follower.cycle()):
                time.sleep(follower.options.interval)
        if k >= 0:
            latencies.append(max(item.latency for item in done))
            split.append((sum(s[1] for s in silver.values()),
                          sum(s[1] for s in history.values())))
        key, price = next(iter(prices.items()))
        current = spark.sql(f"select cast(unit_price as string) from "
                            f"{dbt_args['schema']}_dimensions.{HISTORY} "
                            f"where product_id = {key} and is_current").collect()
        assert [r[0] for r in current] == [price], (key, price, current)
    return latencies, split


def _builtin_project(root: Path) -> Path:
    project = root / "builtin_project"
    if not project.exists():
        (project / "models").mkdir(parents=True)
        (project / "dbt_project.yml").write_text(
            BUILTIN_PROJECT.format(macros=PROJECT_ROOT / "macros" / "adapters"))
        (project / "models" / "builtin.sql").write_text(BUILTIN_MODEL)
    return project


def sample_noop(root: Path) -> tuple[float, float, float]:
    """(first build, build with nothing landed, the same without the unit
    tests) of the sample, in seconds. dbt's documentation advises running
    unit tests (static inputs) in development and CI only: a production
    build leaves them out with `--exclude-resource-type unit_test`."""
    from lakehouse_cdc.dbt_runner import run_dbt
    from lakehouse_cdc.simulator import SimulationConfig, land_batch, simulate
    from lakehouse_cdc.simulator.truth import read_manifest

    sim, landing = root / "sample_sim", root / "sample_landing"
    simulate(SimulationConfig(out=sim), overwrite=True)
    for entry in read_manifest(sim)["batches"]:  # everything the simulator wrote
        land_batch(sim, landing, entry["batch"])
    dbt_args = {"schema": "peers_sample", "vars": {"landing_root": str(landing)},
                "target_path": root / "target_sample"}
    started = time.time()
    run_dbt(["seed"], **dbt_args)
    run_dbt(["build"], **dbt_args)
    first = time.time() - started
    started = time.time()
    run_dbt(["build"], **dbt_args)
    noop = time.time() - started
    started = time.time()
    run_dbt(["build", "--exclude-resource-type", "unit_test"], **dbt_args)
    return first, noop, time.time() - started


SOURCES_SYSTEM = "fleet"


@dataclass
class SourcesResult:
    sources: int
    changed: int
    first_run: float = 0.0
    run: float = 0.0
    changed_model: float = 0.0
    idle_model: float = 0.0
    follow: float = 0.0  # a warm follower's turn that applied the next file of each changed table
    follow_files: int = 0


def write_small_load(folder: Path, rows: int) -> Path:
    """A DMS full-load CSV (header, Op included) of `rows` orders, written here."""
    at = _ts(0)
    lines = [",".join(HEADER)]
    lines += [",".join(["I", at, "", str(key), str(key % 100000 + 1), _ts(key),
                        STATUSES[key % 4], at]) for key in range(1, rows + 1)]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "LOAD00000001.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def bench_sources(count: int, changed: int, rows: int, seed: int, root: Path,
                  schema: str | None = None) -> SourcesResult:
    """`count` source tables of `rows` orders each in a generated project: one
    `dbt run` of their silver models to load them, then one more after a CDC
    file of 50 changes landed in `changed` of them."""
    from lakehouse_cdc.add_table import add_table
    from lakehouse_cdc.dbt_runner import run_dbt

    out = SourcesResult(count, changed)
    project = copy_project(root / f"sources_{count}")
    landing = root / f"sources_{count}_landing"
    say = lambda text: print(f"[bench --sources] {count} sources: {text}", flush=True)  # noqa: E731
    say(f"writing {count} tables' full-load files and their YAML and models")
    for i in range(count):
        folder = landing / SOURCES_SYSTEM / f"t{i:03d}"
        write_small_load(folder, rows)
        add_table(folder, project_dir=project, key=["order_id"], landing_root=landing)
    dbt_args = {"project_dir": project, "schema": schema or f"sources_{count}",
                "vars": {"landing_root": str(landing)},
                "target_path": root / f"target_sources_{count}"}
    select = ["run", "--select", f"path:models/silver/{SOURCES_SYSTEM}"]
    say("first run (every table's full load)")
    started = time.time()
    run_dbt(select, **dbt_args)
    out.first_run = time.time() - started
    for i in range(changed):
        write_change_file(landing / SOURCES_SYSTEM / f"t{i:03d}" / "20250102-000000001.csv",
                          rows, 50, 0.0, 1, seed + i)
    say(f"run with a CDC file landed in {changed} of them")
    started = time.time()
    result = run_dbt(select, **dbt_args)
    out.run = time.time() - started
    seconds = {r.node.name: r.execution_time for r in result.result.results}
    touched = [f"slv_{SOURCES_SYSTEM}__t{i:03d}" for i in range(changed)]
    out.changed_model = statistics.mean(seconds[m] for m in touched)
    idle = [t for m, t in seconds.items() if m not in touched]
    out.idle_model = statistics.median(idle) if idle else 0.0
    say(f"first run {out.first_run:.1f}s; run with {changed} changed {out.run:.1f}s")
    out.follow, out.follow_files = _follow_sources(dbt_args, landing, changed, rows, seed)
    say(f"warm `follow`: {out.follow_files} file(s) applied in {out.follow:.1f}s")
    return out


def _follow_sources(dbt_args: dict[str, Any], landing: Path, changed: int, rows: int,
                    seed: int) -> tuple[float, int]:
    """A warm follower of the generated project's silver models, caught up
    (untimed), then one more CDC file landed in each of the first `changed`
    tables: (seconds of the turn that applied them, files it applied)."""
    from lakehouse_cdc.follow import Follower, FollowOptions
    from lakehouse_cdc.spark import get_spark

    follower = Follower(get_spark(), FollowOptions(
        schema=dbt_args["schema"], select=f"path:models/silver/{SOURCES_SYSTEM}",
        downstream="none", settle=0.0, interval=0.2, vars=dbt_args["vars"],
        project_dir=dbt_args["project_dir"], target_path=dbt_args["target_path"]))
    follower.cycle(first=True)  # catching up: every file is in the file logs already
    for i in range(changed):
        write_change_file(landing / SOURCES_SYSTEM / f"t{i:03d}" / "20250102-000000002.csv",
                          rows, 50, 0.0, 2, seed + 1000 + i)
    started = time.time()
    done = follower.cycle()
    return time.time() - started, len(done)


def sources_report(results: list[SourcesResult], rows: int) -> str:
    lines = [f"Source tables of {rows:,} rows each, a CDC file of 50 changes landed in some of "
             "them, `dbt run` of their silver models (seconds):", "",
             "| source tables | with a new file | first run (full loads) | run | "
             "model with a new file (mean) | model with none (median) | warm `follow` turn |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.sources} | {r.changed} | {r.first_run:.1f} | {r.run:.1f} | "
                     f"{r.changed_model:.2f} | "
                     f"{f'{r.idle_model:.2f}' if r.sources > r.changed else '-'} | "
                     f"{r.follow:.1f} ({r.follow_files} files) |")
    if len(results) > 1:
        lines += ["", f"Run with {results[-1].sources} sources / with {results[0].sources}: "
                  f"{results[-1].run / results[0].run:.2f} (`dbt run`), "
                  f"{results[-1].follow / results[0].follow:.2f} (warm `follow`)"]
    return "\n".join(lines)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def report(results: list[SizeResult], noop: tuple[float, float, float] | None,
           args: argparse.Namespace) -> str:
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, "
               f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
               f"load average at the end {os.getloadavg()[0]:.1f}")
    if not results:  # the sample's builds alone (--sizes "")
        lines = [f"`lakehouse bench --peers --sizes \"\"` on {dt.date.today().isoformat()}, "
                 f"{machine}; one Spark process (local[2])."]
        if noop is not None:
            lines += ["", _noop_line(noop)]
        return "\n".join(lines)
    rounds = len(results[0].rounds.get("project", [])) or 1
    lines = [f"`lakehouse bench --peers --sizes {','.join(str(r.rows) for r in results)} "
             f"--changes {args.changes} --repeat-rate {args.repeat_rate} --rounds {rounds}` on "
             f"{dt.date.today().isoformat()}, {machine}; one Spark process (local[2]), "
             "Iceberg merge-on-read, "
             + ("cold: no warm-up. " if getattr(args, "cold", False)
                else "after an untimed warm-up of 20,000 rows. ")
             + (f"Seconds for one batch: the median of {rounds} rounds, each a new batch of "
                "that size applied by every contender in turn (the order turning each round), "
                "their range in brackets; the ratios are of the medians:" if rounds > 1
                else "Seconds for one batch (one round):"), "",
             "| table rows | batch rows | project | built-in merge | Glue-MERGE-style job "
             "| append floor | project / built-in | project / Glue-style | project / floor "
             "| same rows as Glue-style |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"]
    for r in results:
        lines.append(f"| {r.rows:,} | {r.batch_rows:,} | {r.project:.1f}{r.spread('project')} | "
                     f"{r.builtin:.1f}{r.spread('builtin')} | {r.glue:.1f}{r.spread('glue')} | "
                     f"{r.floor:.1f}{r.spread('floor')} | {r.project / r.builtin:.2f} | "
                     f"{r.project / r.glue:.2f} | {r.project / r.floor:.1f} | "
                     f"{'yes' if r.same_as_glue else 'NO'} |")
        if not r.builtin_merged:
            lines.append(f"| (the built-in merge at {r.rows:,} rows did not MERGE into the "
                         "existing table: its figure is not comparable) |")
    lines += ["", "| table rows | project full load | typed insert of the file | ratio "
              "| dbt run wall (project) | landing to silver p50 (`follow`) | p95 (files) "
              f"| landing to silver and SCD2 p50 (`follow`, product and {HISTORY}) | p95 (files) |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.rows:,} | {r.full_load:.1f} | {r.typed_insert:.1f} | "
                     f"{r.full_load / r.typed_insert:.1f} | {r.project_wall:.1f} | "
                     f"{statistics.median(r.freshness) if r.freshness else 0:.1f} | "
                     f"{_p(r.freshness, 0.95):.1f} ({len(r.freshness)}) | "
                     f"{statistics.median(r.freshness_history or [0]):.1f} | "
                     f"{_p(r.freshness_history, 0.95):.1f} ({len(r.freshness_history)}) |")
    for r in results:
        if r.history_split:
            silver = statistics.median(s for s, _ in r.history_split)
            history = statistics.median(h for _, h in r.history_split)
            lines += ["", f"A `follow` turn of the product at {r.rows:,} rows (medians of "
                      f"{len(r.history_split)}): landing to both visible "
                      f"{statistics.median(r.freshness_history):.2f} s, of which the "
                      f"statements of {HISTORY_MODEL} {silver:.2f} s and of {HISTORY} "
                      f"{history:.2f} s (the rest: the hook's listing, dbt, the wait to see "
                      "the file)."]
    if len(results) > 1:
        first, last = results[0], results[-1]
        lines += ["", f"Project t({last.rows:,}) / t({first.rows:,}): "
                  f"{last.project / first.project:.2f}"]
    lines += steps_report(results)
    if noop is not None:
        lines += ["", _noop_line(noop)]
    return "\n".join(lines)


def steps_report(results: list[SizeResult]) -> list[str]:
    """Where the project's batch, the full load and a `follow` turn went, by
    step: the median over the rounds (turns; the full load is one run) of
    each step's seconds (statements / Spark jobs in brackets), one column
    per table size; each table left out when nothing was timed by step."""
    lines = _steps_table(results, "steps", "Where the project's batch went (seconds, the median "
                         "of the rounds; in brackets its statements / their Spark jobs):",
                         "the project's figure (the model's run)",
                         [r.project for r in results if r.steps])
    lines += _steps_table(results, "full_load_steps", "Where the full load went (every statement "
                          "of its `dbt run`, the source's first staging by the on-run-start hook "
                          "too; outside them, dbt; the project parsed before, untimed):",
                          "the full load",
                          [r.full_load for r in results if r.full_load_steps])
    return lines + _steps_table(
        results, "follow_steps", "Where a `follow` turn went (one small file, landing to "
        "visible; every statement of its dbt run, the on-run-start hook's too; outside them, "
        "dbt and the wait until the follower saw the file; the median of the turns):",
        "landing to silver (`follow`, median)",
        [statistics.median(r.freshness) for r in results if r.follow_steps])


def _steps_table(results: list[SizeResult], attribute: str, title: str, total: str,
                 totals: list[float]) -> list[str]:
    sized = [r for r in results if getattr(r, attribute)]
    if not sized:
        return []
    names = [name for name, _ in STEPS] + [OTHER_STEP, OUTSIDE_STEP]
    lines = ["", title, "",
             "| step | " + " | ".join(f"{r.rows:,} rows" for r in sized) + " |",
             "|:---|" + "---:|" * len(sized)]
    for name in names:
        cells = []
        for r in sized:
            timed = getattr(r, attribute)
            timed = [timed] if isinstance(timed, dict) else timed  # the full load: one run
            seconds = statistics.median(s.get(name, [0, 0.0, 0])[1] for s in timed)
            count = statistics.median(s.get(name, [0, 0.0, 0])[0] for s in timed)
            jobs = [s.get(name, [0, 0.0, 0])[2] for s in timed]
            jobs = f" / {statistics.median(jobs):g}" if None not in jobs else ""
            cells.append(f"{seconds:.2f}" + (f" ({count:g}{jobs})" if name != OUTSIDE_STEP else ""))
        if any(not cell.startswith(("0.00 (0)", "0.00 (0 / ")) for cell in cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(f"| {total} | " + " | ".join(f"{t:.2f}" for t in totals) + " |")
    return lines


def _noop_line(noop: tuple[float, float, float]) -> str:
    return (f"Sample project (`lakehouse run` data): first `dbt build` {noop[0]:.1f}s; again "
            f"with nothing landed {noop[1]:.1f}s, and {noop[2]:.1f}s without the unit tests "
            "(`--exclude-resource-type unit_test`, a production build).")


def plot(results: list[SizeResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r.rows for r in results]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, attr in [("project (cdc_merge)", "project"), ("dbt-spark built-in merge", "builtin"),
                        ("Glue-MERGE-style job", "glue"), ("append floor", "floor")]:
        ax.plot(sizes, [getattr(r, attr) for r in results], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("silver table rows")
    rounds = len(results[0].rounds.get("project", [])) or 1
    ax.set_ylabel("seconds for one batch" + (f" (median of {rounds} rounds)" if rounds > 1 else ""))
    ax.set_title(f"One CDC batch of {results[0].batch_rows:,} rows, by table size")
    ax.grid(True, alpha=0.3)
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def publish(results: list[SizeResult], noop: tuple[float, float, float] | None,
            by_sources: list[SourcesResult], args: argparse.Namespace) -> None:
    """Print the report of the parts measured so far, and write it and the plot."""
    text = report(results, noop, args) if results or noop else ""
    if by_sources:
        text = (text + "\n\n" if text else "") + sources_report(by_sources, args.source_rows)
    print("\n" + text, flush=True)
    if results:
        plot(results, args.plot)
        print(f"\nplot: {args.plot}", flush=True)
    if args.report:
        args.report.write_text(text + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lakehouse bench --peers",
        description="Apply one CDC batch with this project and with its peers (dbt-spark's "
        "built-in merge, a hand-written Glue-MERGE-style PySpark job, a plain append) on "
        "tables of the given sizes, in one Spark process; print the figures and ratios as "
        "Markdown and plot them. Uses its own warehouse in a temporary folder.")
    parser.add_argument("--sizes", default="1000000,10000000",
                        help="silver table rows, comma-separated (default 1000000,10000000)")
    parser.add_argument("--changes", type=int, default=20_000,
                        help="distinct changes in the batch (default 20000)")
    parser.add_argument("--repeat-rate", type=float, default=0.05,
                        help="share of the changes made a second time in the batch (0.05)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="batches of that size applied by every contender in turn; each "
                        "figure is their median, with their range (3)")
    parser.add_argument("--freshness", type=int, default=5,
                        help="small files landed one by one, applied by `lakehouse follow`, "
                        "to time landing to silver (orders), and as many to time landing to "
                        "silver and its SCD2 history (product, dim_product) (5)")
    parser.add_argument("--no-sample", action="store_true",
                        help="skip the sample project's build with nothing landed")
    parser.add_argument("--sources", default="",
                        help="also time a project with each of these numbers of source tables, "
                        "comma-separated, e.g. 5,200 (default: not run)")
    parser.add_argument("--changed", type=int, default=5,
                        help="source tables given a new CDC file in that run (default 5)")
    parser.add_argument("--source-rows", type=int, default=1000,
                        help="rows of each of those tables (default 1000)")
    parser.add_argument("--plot", type=Path, default=PROJECT_ROOT / "docs/img/bench-peers.png",
                        help="where to write the PNG (default docs/img/bench-peers.png)")
    parser.add_argument("--report", type=Path, help="also write the Markdown report here")
    parser.add_argument("--cold", action="store_true",
                        help="no untimed warm-up before the first size: its figures then "
                        "include the JVM's class loading and JIT compilation")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    with tempfile.TemporaryDirectory(prefix="lakehouse-bench-peers-") as tmp:
        root = Path(tmp)
        os.environ["LAKEHOUSE_HOME"] = str(root / "home")
        from lakehouse_cdc.spark import get_spark

        spark = get_spark()
        if sizes and not args.cold:
            warm_up(spark, args, root)
        results = [bench_size(spark, rows, args, root) for rows in sizes]
        publish(results, None, [], args)  # each part is kept as it ends: a stopped run keeps it
        noop = None if args.no_sample else sample_noop(root)
        if noop is not None:
            publish(results, noop, [], args)
        by_sources: list[SourcesResult] = []
        for n in [int(s) for s in args.sources.split(",") if s.strip()]:
            by_sources.append(bench_sources(n, min(args.changed, n), args.source_rows, args.seed,
                                            root))
            publish(results, noop, by_sources, args)
    return 0 if all(r.same_as_glue and r.builtin_merged for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
