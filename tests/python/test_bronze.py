"""Bronze: the external tables over DMS files show every row the simulator
wrote, with file and row, NULL kept apart from '', in CSV and Parquet (and
Debezium JSON lines); a new
source table needs only a YAML entry (and a short SQL file for silver)."""

from __future__ import annotations

import contextlib
import csv
import uuid
from collections import Counter
from pathlib import Path

import pytest
from cdc_helpers import Scenario, canon
from lakehouse_cdc.dbt_runner import run_dbt
from lakehouse_cdc.simulator import TABLES, read_files, read_versions
from py4j.protocol import Py4JJavaError

SMALL = {"seed": 11, "scale": 40, "batches": 2}


def _stage(schema: str, landing: Path, project_dir: Path | None = None, **vars) -> None:
    kwargs = {"project_dir": project_dir} if project_dir else {}
    run_dbt(["run-operation", "stage_bronze_sources"], schema=schema,
            vars={"landing_root": str(landing), **vars}, **kwargs)


@pytest.mark.parametrize(
    ("fmt", "full_load_op", "csv_null", "header"),
    [("csv", "I", "empty", True), ("csv", "absent", "NULL", True), ("csv", "I", "empty", False),
     ("csv", "absent", "NULL", False), ("parquet", "I", "empty", True),
     ("debezium", "I", "empty", True)],
)
def test_bronze_rows_equal_files_written(spark, schema, simulated, tmp_path, fmt, full_load_op,
                                         csv_null, header):
    """Header-less CSV (DMS's default) loses no row: the first row is data."""
    sim = simulated(**SMALL, format=fmt, full_load_op=full_load_op, csv_null=csv_null,
                    csv_header=header)
    scenario = Scenario(sim, tmp_path / "landing", schema)
    for batch in range(SMALL["batches"] + 1):
        scenario.land(batch)
    formats = {"bronze_format": fmt, "bronze_csv_header": header,
               "bronze_full_load_op": "included" if full_load_op == "I" else "absent"}
    _stage(schema, scenario.landing, **formats)

    written = Counter()
    for entry in read_files(sim):
        written[(entry.table, Path(entry.file).name)] += entry.rows
    seen = Counter()
    for table in TABLES:
        # (one query per table: each reads and parses the table's files)
        rows = spark.sql(
            f"select _cdc_file, count(*) n, min(_cdc_row) lo, max(_cdc_row) hi, "
            f"count(distinct _cdc_row) distinct_rows, count_if(_cdc_malformed is not null) bad, "
            f"max(_cdc_file_rows) in_file, "
            f"collect_set(case when _cdc_phase = 0 then _cdc_op end) load_ops "
            f"from {schema}_bronze.{table} group by _cdc_file").collect()
        ops = set()
        for row in rows:
            seen[(table, Path(row._cdc_file).name)] += row.n
            # every row read as a row of its table, and counted before parsing
            assert (row.bad, row.in_file) == (0, row.n), row
            # row numbers are 1..n within each file
            assert (row.lo, row.hi, row.distinct_rows) == (1, row.n, row.n), row
            ops.update(row.load_ops)
        assert ops == {"I"}, f"full-load rows of {table} must read as inserts, got {ops}"
    assert seen == written
    # what a CDC run with no new file reads instead of the parse: the same
    # columns, of the same types, in this format too
    node = "graph.sources['source.lakehouse_cdc.dms_retail.{}']"
    inline = ";".join("{{ bronze_no_rows(" + node.format(table) + ") }}" for table in TABLES)
    # (the staging's vars: a parse of the project with other vars would be a second one)
    compiled = run_dbt(["compile", "--inline", inline], schema=schema,
                       vars={"landing_root": str(scenario.landing), **formats},
                       ).result.results[0].node.compiled_code.split(";")
    for table, sql in zip(TABLES, compiled, strict=True):
        assert (spark.sql(sql).schema.simpleString()
                == spark.table(f"{schema}_bronze.{table}").schema.simpleString()), table


def test_null_and_empty_string_survive(spark, schema, simulated, tmp_path):
    sim = simulated(**SMALL)
    scenario = Scenario(sim, tmp_path / "landing", schema)
    scenario.land(0)
    _stage(schema, scenario.landing)
    # the full load, as the simulator's own database held it
    truth = {v["customer_id"]: v["employer_name"]
             for v in read_versions(sim, "customer_master") if v["batch"] == "0"}
    bronze = {r.customer_id: r.employer_name for r in spark.sql(
        f"select customer_id, employer_name from {schema}_bronze.customer_master").collect()}
    assert bronze == truth
    assert None in truth.values() and "" in truth.values(), "sample lacks NULL or ''"


def test_quoting_survives(spark, schema, simulated, tmp_path):
    sim = simulated(**SMALL)
    scenario = Scenario(sim, tmp_path / "landing", schema)
    scenario.land(0)
    _stage(schema, scenario.landing)
    truth = {v["customer_id"]: v["address_line"]
             for v in read_versions(sim, "customer_address") if v["batch"] == "0"}
    bronze = {r.customer_id: r.address_line for r in spark.sql(
        f"select customer_id, address_line from {schema}_bronze.customer_address").collect()}
    assert bronze == truth
    tricky = [a for a in truth.values() if a and any(c in a for c in ',"\n')]
    assert tricky, "sample lacks values needing RFC 4180 quoting"


STORE_YAML = """
      - name: store
        description: Stores, added by a test to show a new table is one YAML entry.
        meta:
          external: {location: retail/store}
        columns:
          - name: store_id
            description: Store key.
            data_type: bigint
          - name: store_name
            description: Name.
            data_type: string
          - name: opened_at
            description: Opening time.
            data_type: timestamp
"""

STORE_SQL = """{{ config(unique_key='store_id') }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'store')) }}
)

select * from changes
"""


def test_new_source_table_is_a_yaml_entry_and_a_short_model(spark, project_copy, tmp_path):
    project = project_copy()
    sources = project / "models" / "bronze" / "dms" / "_dms__sources.yml"
    sources.write_text(sources.read_text() + STORE_YAML)
    (project / "models" / "silver" / "retail" / "slv_retail__store.sql").write_text(STORE_SQL)

    landing = tmp_path / "landing"
    folder = landing / "retail" / "store"
    folder.mkdir(parents=True)
    header = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "store_id", "store_name", "opened_at"]
    load = [["I", "2025-01-01 00:00:00.000000", "", "1", "Main St", "2020-05-01 09:00:00.000000"],
            ["I", "2025-01-01 00:00:00.000000", "", "2", "Harbour", "2021-06-01 09:00:00.000000"]]
    cdc = [["U", "2025-01-01 01:00:00.000001", "20250101010000000000000000000000001", "1",
            "Main Street", "2020-05-01 09:00:00.000000"],
           ["D", "2025-01-01 01:00:00.000002", "20250101010000000000000000000000002", "2",
            "Harbour", "2021-06-01 09:00:00.000000"],
           ["I", "2025-01-01 01:00:00.000003", "20250101010000000000000000000000003", "3",
            "Airport", "2025-01-01 01:00:00.000000"]]
    for name, rows in (("LOAD00000001.csv", load), ("20250101-010000500.csv", cdc)):
        with open(folder / name, "w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows([header, *rows])

    schema = f"t_new_table_{uuid.uuid4().hex[:6]}"
    run_dbt(["build", "--select", "slv_retail__store"], project_dir=project, schema=schema,
            vars={"landing_root": str(landing)}, target_path=tmp_path / "target")
    assert spark.table(f"{schema}_bronze.store").count() == 5
    rows = {(r.store_id, r.store_name, canon(r.opened_at)) for r in spark.sql(
        f"select store_id, store_name, opened_at from {schema}_silver.slv_retail__store"
    ).collect()}
    assert rows == {(1, "Main Street", "2020-05-01 09:00:00.000000"),
                    (3, "Airport", "2025-01-01 01:00:00.000000")}


def test_lines_numbered_across_many_splits(spark, schema, simulated, tmp_path):
    """A file read in many splits (here 512 bytes each, as a large file is read
    in 128 MiB ones) is numbered in file order and its quoted newlines still
    join lines into one record, also across a split boundary: each row number
    holds the record Python's csv module reads at that position."""
    sim = simulated(**SMALL)
    scenario = Scenario(sim, tmp_path / "landing", schema)
    for batch in range(SMALL["batches"] + 1):
        scenario.land(batch)
    _stage(schema, scenario.landing)
    files = sorted((scenario.landing).rglob("customer_address/*.csv"))
    assert files and max(f.stat().st_size for f in files) > 4 * 512, "files too small to split"
    truth = {}
    for path in files:
        with path.open(newline="", encoding="utf-8") as handle:
            for number, record in enumerate(csv.DictReader(handle), start=1):
                record = {k.lower(): v for k, v in record.items()}
                truth[(path.name, number)] = (record["customer_id"], record["address_line"] or "")
    assert any("\n" in address for _, address in truth.values()), "sample lacks quoted newlines"
    spark.conf.set("spark.sql.files.maxPartitionBytes", "512")
    try:
        rows = spark.sql(f"select _cdc_file, _cdc_row, customer_id, address_line, _cdc_malformed "
                         f"from {schema}_bronze.customer_address").collect()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert [r for r in rows if r._cdc_malformed is not None] == []
    bronze = {(Path(r._cdc_file).name, r._cdc_row): (r.customer_id, r.address_line or "")
              for r in rows}
    assert bronze == truth


def _joins(spark, sql: str) -> Counter:
    """The join operators of `sql`'s physical plan, by name."""
    plan = spark.sql("explain " + sql).collect()[0][0]
    return Counter(op for op in ("BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin")
                   for _ in range(plan.count(op)))


def test_csv_rows_join_their_file_facts_by_broadcast(spark, schema, simulated, tmp_path):
    """Each CSV line meets its split's counts, and each record its file's
    facts, through a broadcast of the small side: a plan that shuffled the
    lines by file would send every line of a file to one task (a 1M-line
    file's view took 10-12 s that way instead of 5-6 s, docs/benchmark.md).
    Spark broadcasts those sides only because of the hints in
    `_bronze_numbered_lines` and `_bronze_csv_rows`: it estimates them by
    the files' size, so with the threshold off, as for large files, the
    same SQL without its hints plans sort-merge joins."""
    sim = simulated(**SMALL)
    scenario = Scenario(sim, tmp_path / "landing", schema)
    scenario.land(0)
    _stage(schema, scenario.landing)
    node = "graph.sources['source.lakehouse_cdc.dms_retail.orders']"
    sql = run_dbt(["compile", "--inline", "{{ bronze_select(" + node + ") }}"], schema=schema,
                  vars={"landing_root": str(scenario.landing)}).result.results[0].node.compiled_code
    hints = ("/*+ broadcast(f) */", "/*+ broadcast(o) */")
    bare = sql
    for hint in hints:
        bare = bare.replace(hint, "")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        hinted, unhinted = _joins(spark, sql), _joins(spark, bare)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    # the lines meet their split counts in both branches of the records
    # (one-line and multi-line), and the records their file's facts
    assert hinted == Counter({"BroadcastHashJoin": hinted["BroadcastHashJoin"]}), hinted
    assert hinted["BroadcastHashJoin"] >= 3, hinted
    # (the hints are what broadcasts: the SQL without them does not)
    assert bare != sql
    assert unhinted["SortMergeJoin"] >= 1, unhinted


def _bytes_read(spark, sql: str) -> int:
    """The bytes Spark's scans read to collect `sql`: the input of every
    stage of the jobs it started, from Spark's own status store."""
    context = spark.sparkContext._jsc.sc()
    first = context.dagScheduler().numTotalJobs()
    spark.sql(sql).collect()
    context.listenerBus().waitUntilEmpty()
    stages = set()
    for job in range(first, context.dagScheduler().numTotalJobs()):
        stages.update(spark.sparkContext.statusTracker().getJobInfo(job).stageIds)
    total = 0
    for stage in stages:
        # (a stage skipped, its output there already, has no attempt)
        with contextlib.suppress(Py4JJavaError):
            total += context.statusStore().lastStageAttempt(stage).inputBytes()
    return total


def test_large_batch_records_equal_and_read_the_lines_once(spark, schema, simulated, tmp_path):
    """The CSV records of a large batch (`large`: each kind of record filters
    its own broadcast of the block offsets) are those of a small one's form
    (one broadcast shared) row for row, where records span lines too (the
    customer_address files hold quoted newlines); and where no record does,
    the multi-line kind does not read the lines: the files' bytes are read
    twice (the offsets, the records), not three times."""
    sim = simulated(**SMALL)
    scenario = Scenario(sim, tmp_path / "landing", schema)
    for batch in range(SMALL["batches"] + 1):
        scenario.land(batch)
    _stage(schema, scenario.landing)
    orders = sorted(scenario.landing.rglob("orders/*.csv"))
    assert orders and not any(line.count(b'"') % 2 for path in orders
                              for line in path.read_bytes().splitlines()), "orders span lines"
    forms = [(table, large) for table in ("orders", "customer_address")
             for large in ("false", "true")]
    inline = "\n;\n".join(
        f"{{{{ bronze_csv_records(graph.sources['source.lakehouse_cdc.dms_retail.{table}'], "
        f"large={large}) }}}}" for table, large in forms)
    run = run_dbt(["compile", "--inline", inline], schema=schema,
                  vars={"landing_root": str(scenario.landing)})
    compiled = run.result.results[0].node.compiled_code
    records = dict(zip(forms, compiled.split("\n;\n"), strict=True))
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        for table in ("orders", "customer_address"):
            shared, large = (sorted(spark.sql(records[table, form]).collect())
                             for form in ("false", "true"))
            assert large == shared, table
            assert shared and (table == "orders") != any("\n" in r.record for r in shared), table
        size = sum(path.stat().st_size for path in orders)
        read = {form: _bytes_read(spark, records["orders", form]) for form in ("false", "true")}
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    assert read == {"false": 3 * size, "true": 2 * size}, (size, read)
