"""Silver edge cases: an unbreakable tie fails naming the key; columns added,
dropped and widened at the source evolve the table without a full refresh."""

from __future__ import annotations

import csv
import re
import uuid
from pathlib import Path

import pytest
from cdc_helpers import Scenario, diff, failing_statements, silver_state, truth_state
from lakehouse_cdc.dbt_runner import DbtError, run_dbt

HEADER = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "customer_id", "first_name", "last_name",
          "employer_name", "email_id", "row_audit_ts"]


def _write(path: Path, rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([HEADER, *rows])


def test_tie_the_sequence_cannot_break_fails_naming_the_key(spark, schema, tmp_path):
    landing = tmp_path / "landing"
    folder = landing / "retail" / "customer_master"
    ts = "2025-01-01 00:00:00.000000"
    _write(folder / "LOAD00000001.csv", [
        ["I", ts, "", "1", "Ann", "Lee", "", "ann@example.com", ts],
        ["I", ts, "", "2", "Bob", "Ray", "", "bob@example.com", ts]])
    scenario = Scenario(Path("."), landing, schema, target_path=tmp_path / "target")
    select = "slv_retail__customer_master"
    scenario.build(select)
    table = f"{schema}_silver.{select}"
    before = spark.sql(f"select snapshot_id from {table}.snapshots").collect()

    seq = "20250101010000000000000000000000007"
    commit = "2025-01-01 01:00:00.000000"
    _write(folder / "20250101-010000100.csv", [
        ["U", commit, seq, "2", "Bob", "Ray", "", "bob@new.example.com", commit],
        ["U", commit, seq, "2", "Bob", "Ray", "", "robert@example.com", commit],
        ["U", commit, "20250101010000000000000000000000008", "1", "Ann", "Lee", "ACME",
         "ann@example.com", commit]])
    with pytest.raises(DbtError) as failure:
        scenario.build(select)
    message = str(failure.value)
    assert '"customer_id":2' in message and "cdc_sequence_by" in message, message
    assert '"customer_id":1' not in message
    # nothing was applied: same snapshot, same rows
    assert spark.sql(f"select snapshot_id from {table}.snapshots").collect() == before
    assert {r.customer_id: r.email_id for r in spark.table(table).collect()} == {
        1: "ann@example.com", 2: "bob@example.com"}


def _edit(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text()
    new = re.sub(pattern, replacement, text, flags=re.MULTILINE)
    assert new != text, f"{pattern!r} not found in {path}"
    path.write_text(new)


def test_columns_added_dropped_and_widened_without_full_refresh(spark, simulated, project_copy,
                                                                tmp_path):
    sim = simulated(seed=5, scale=40, batches=3, add_column_at_batch=2, changes_per_batch=40)
    project = project_copy()
    sources = project / "models" / "bronze" / "dms" / "_dms__sources.yml"
    model = project / "models" / "silver" / "retail" / "slv_retail__customer_master.sql"
    original_sources, original_model = sources.read_text(), model.read_text()
    # phase 1: the source has no loyalty_tier yet and unit_price is decimal(10,2)
    _edit(sources, r"^          - name: loyalty_tier\n(^            .*\n)+", "")
    _edit(model, r"^        trim\(loyalty_tier\) as loyalty_tier,\n", "")
    schema = f"t_evolve_{uuid.uuid4().hex[:6]}"
    scenario = Scenario(sim, tmp_path / "landing", schema, target_path=tmp_path / "target")

    def build():
        # the two models the assertions read; not their dbt unit tests, whose
        # given rows name loyalty_tier, which this copy's source drops for a while
        run_dbt(["build", "--select", "slv_retail__customer_master slv_retail__product",
                 "--exclude-resource-type", "unit_test"],
                project_dir=project, schema=schema,
                vars={"landing_root": str(scenario.landing)}, target_path=tmp_path / "target")

    for batch in (0, 1):
        scenario.land(batch)
        build()
    table = f"{schema}_silver.slv_retail__customer_master"
    assert "loyalty_tier" not in spark.table(table).columns
    phase1_runs = {r.run_id for r in spark.sql(
        f"select distinct _cdc_run_id run_id from {table}").collect()}

    # phase 2: loyalty_tier added, unit_price widened, employer_name dropped
    sources.write_text(original_sources.replace("data_type: decimal(10,2)",
                                                "data_type: decimal(12,2)"))
    model.write_text(original_model.replace(
        "        trim(employer_name) as employer_name,\n", ""))
    for batch in (2, 3):
        scenario.land(batch)
        build()

    columns = {f.name: f.dataType.simpleString() for f in spark.table(table).schema}
    assert "loyalty_tier" in columns
    assert "employer_name" in columns, "a dropped column must stay"
    product = {f.name: f.dataType.simpleString()
               for f in spark.table(f"{schema}_silver.slv_retail__product").schema}
    assert product["unit_price"] == "decimal(12,2)"
    snapshots = spark.sql(f"select operation from {table}.snapshots").collect()
    assert len(snapshots) > 2, "table was recreated"

    for name in ("customer_master", "product"):
        expected = truth_state(sim, name, 3)
        actual = silver_state(spark, schema, name)
        if name == "customer_master":
            rows = {str(r.customer_id): r for r in spark.sql(
                f"select customer_id, employer_name, _cdc_run_id from {table}").collect()}
            for key, row in expected.items():
                applied_later = rows[key[0]]._cdc_run_id not in phase1_runs
                if applied_later:
                    # dropped at the source: null from then on
                    assert rows[key[0]].employer_name is None, key
                    row["employer_name"] = None
            assert any(r._cdc_run_id not in phase1_runs for r in rows.values())
            assert any(v["loyalty_tier"] for v in expected.values())
        assert actual == expected, diff(expected, actual)


KEYED_MODEL = """{{{{ config(unique_key={key}, meta={{'cdc_keep_changes': true{extra}}}) }}}}

with changes as (
    {{{{ cdc_changes(source('dms_retail', 'customer_master')) }}}}
)

select {{{{ cdc_columns() }}}}, email_id, row_audit_ts,
    cast(customer_id as smallint) as customer_id, first_name
from changes
"""


def _plans_since(spark, after: int) -> dict[int, str]:
    """The physical plans of the SQL executions Spark ran after execution
    `after`, by id (Spark's SQL status store, which keeps the last 1,000)."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    executions = spark._jvm.scala.collection.JavaConverters.seqAsJavaListConverter(
        spark._jsparkSession.sharedState().statusStore().executionsList()).asJava()
    return {e.executionId(): e.physicalPlanDescription()
            for e in executions if e.executionId() > after}


#: the stored rows of a run's keys read by a filter (the key list or the
#: semi join); not a first run's `where false`
STORED_ROWS_FILTERED = r"true as _cdc_present\s+from \S+ as k\s+where\s+(?!false\b)"


def test_batch_key_list_gives_the_same_table_as_joining_the_whole_table(
        spark, schema, project_copy, tmp_path):
    """The statements that join a table by key filter it by the batch's keys
    (`_cdc_batch_keys`). Keys: strings with quotes, a backslash, a comma and
    non-ASCII letters; a timestamp and a smallint (Iceberg stores it as int)
    with them as a composite key, filtered by the keys however small the
    tables (`cdc_key_filter_min_bytes: 0`); the string alone as a single key,
    on tables small enough to be joined whole (the default). The same
    files applied with the key list, without it (`cdc_key_list_max: 0`) and
    on whole tables give the truth computed here from the rows written, row
    for row: a late
    change older than a delete stays dead (the tombstone was found), a change
    delivered twice is kept once, and the tombstones hold each deleted key
    once, with its newest delete: the first delete of a key is inserted; a
    batch with a key deleted again (its tombstone found by the batch) is
    merged; and a run stopped after it inserted them, before its MERGE and
    its file log (as a crash would), is run again by a merge. Without
    the list, Spark filters the table by a bloom filter of the batch's keys in
    each MERGE (`_cdc_run_merge`), as the plans Spark ran show; on whole
    tables no statement asks for the keys, filters by them or sets the
    bloom filter."""
    project, landing = project_copy(), tmp_path / "landing"
    models = project / "models" / "silver" / "retail"
    composite = "['email_id', 'row_audit_ts', 'customer_id']"
    filtered = ", 'cdc_key_filter_min_bytes': 0"
    variants = {"slv_keys__listed": (composite, filtered),
                "slv_keys__unlisted": (composite, filtered + ", 'cdc_key_list_max': 0"),
                "slv_keys__by_email": ("'email_id'", "")}
    for name, (key, extra) in variants.items():
        (models / f"{name}.sql").write_text(KEYED_MODEL.format(key=key, extra=extra))
    folder = landing / "retail" / "customer_master"
    audit = ["2024-03-01 10:00:00.000000", "2024-03-01 10:00:00.000001",
             "2024-12-31 23:59:59.999999"]
    emails = ["o'brien@x.org", "back\\slash@x.org", 'say "hi"@x.org', "ünï@x.org", "a,b@x.org",
              "plain@x.org", "new'one@x.org"]
    keys = [(email, audit[n % 3], str(n + 1)) for n, email in enumerate(emails)]

    def row(op: str, at: str, n: int, key: int, name: str) -> list[str]:
        """A change of keys[key] committed at 2025-01-01 `at`, sequence n (none: full load)."""
        email, ts, number = keys[key]
        seq = f"20250101{at.replace(':', '')}{n:021d}" if n else ""
        return [op, f"2025-01-01 {at}.000000", seq, number, name, "Lee", "", email, ts]

    files = [
        ("LOAD00000001.csv", [row("I", "00:00:00", 0, k, f"load{k}") for k in range(6)]),
        ("20250101-010000000.csv", [
            row("U", "01:00:00", 1, 0, "u1"), row("D", "01:00:00", 2, 1, "d"),
            row("U", "01:00:00", 3, 2, "u3a"), row("U", "01:00:01", 4, 2, "u3b"),
            row("I", "01:00:01", 5, 6, "i7"), row("U", "01:00:01", 6, 3, "u4")]),
        # older than the delete of keys[1]: must not bring it back
        ("20250101-020000000.csv", [row("I", "00:45:00", 7, 1, "zombie")]),
        ("20250101-030000000.csv", [
            row("I", "02:00:00", 1, 1, "back"), row("U", "00:30:00", 1, 0, "late"),
            row("U", "01:00:00", 1, 0, "u1")]),  # delivered again
        # keys[1] deleted again (its tombstone is replaced by this newer
        # one) and keys[4] for the first time
        ("20250101-040000000.csv", [row("D", "03:00:00", 1, 1, "back"),
                                    row("D", "03:00:00", 2, 4, "gone")]),
    ]
    # the truth: per key, the change with the highest (phase, commit, sequence) wins
    truth: dict[tuple[str, str, str], tuple[tuple, list[str]]] = {}
    plans, after = {}, max(_plans_since(spark, -1), default=-1)
    run = ["run", "--select", " ".join(variants)]
    dbt_args = {"project_dir": project, "schema": schema, "vars": {"landing_root": str(landing)},
                "target_path": tmp_path / "target"}
    for n, (name, rows) in enumerate(files):
        _write(folder / name, rows)
        for r in rows:
            key, order = (r[7], r[8], r[3]), (name.startswith("2"), r[1], r[2])
            if key not in truth or order > truth[key][0]:
                truth[key] = (order, r)
        if n == 1:
            # each model's run fails at its MERGE into the table, after its
            # tombstones took the delete of keys[1]; nothing is logged as read
            with failing_statements(rf"merge into \S+\.({'|'.join(variants)}) as t\b"):
                failed = run_dbt(run, expect_success=False, **dbt_args)
            assert not failed.success
            for model in variants:
                assert spark.table(f"{schema}_silver.{model}__cdc_tombstones").count() == 1, model
        run_dbt(run, **dbt_args)
        plans.update(_plans_since(spark, after))
        after = max(plans, default=after)
        expected = sorted((k[0], k[1], int(k[2]), r[4]) for k, (_, r) in truth.items()
                          if r[0] != "D")
        for model in variants:
            got = sorted((r.email_id, r.row_audit_ts.strftime("%Y-%m-%d %H:%M:%S.%f"),
                          r.customer_id, r.first_name)
                         for r in spark.table(f"{schema}_silver.{model}").collect())
            assert got == expected, (name, model, got, expected)
    # each change kept once: the one delivered twice too
    changes = {(r[7], r[8], r[3], r[1], r[2]) for _, rows in files for r in rows}
    for model in variants:
        kept = spark.table(f"{schema}_silver.{model}__cdc_changes")
        assert kept.count() == len(changes) == sum(len(rows) for _, rows in files) - 1, model
    # the tombstones: each deleted key once, with the sequence of its newest delete
    deletes: dict[tuple[str, str, str], tuple] = {}
    for name, rows in files:
        for r in rows:
            key, order = (r[7], r[8], r[3]), (name.startswith("2"), r[1], r[2])
            if r[0] == "D" and order > deletes.get(key, ((),))[0]:
                deletes[key] = (order, r)
    # (by the email alone: it is a key of its own, each key's is different)
    expected_tombstones = sorted((k[0], r[1], r[2]) for k, (_, r) in deletes.items())
    for model in variants:
        got = sorted((r.email_id, r._cdc_commit_ts.strftime("%Y-%m-%d %H:%M:%S.%f"),
                      str(r._cdc_change_seq))
                     for r in spark.table(f"{schema}_silver.{model}__cdc_tombstones").collect())
        assert got == expected_tombstones, (model, got, expected_tombstones)
    # both ways ran: with the list, each join by key filtered the table by it; without, none
    log = (project / "logs" / "dbt.log").read_text()
    statements = re.findall(r"On model\.lakehouse_cdc\.(slv_keys__\w+): (.*?)\n\x1b\[0m\d\d:",
                            log, flags=re.S)
    # (a first run reads no stored row: its table is empty, `where false`)
    for model in variants:
        first = next(sql for name, sql in statements if name == model and "_cdc_present" in sql)
        assert re.search(r"true as _cdc_present\s+from \S+ as k\s+where false\b", first), model
    key_filter = "as smallint)) in (("  # the composite key's tuple, the table's side cast
    for model, listed in [("slv_keys__listed", True), ("slv_keys__unlisted", False)]:
        for pattern in [rf"merge into \S+\.{model} as t", rf"merge into \S+{model}__cdc_tombstones",
                        rf"merge into \S+{model}__cdc_changes",
                        STORED_ROWS_FILTERED]:
            seen = [key_filter in sql for name, sql in statements
                    if name == model and re.search(pattern, sql)]
            assert seen and all(f == listed for f in seen), (model, pattern, seen)
    # the tombstones and the horizon are read only when they hold rows
    # (_cdc_known_empty): the tombstones by the batch of each run after the
    # one that recorded the first delete (the second file's second run, the
    # third to fifth files), the horizon never (no truncate, no tombstone
    # older than the retention); the first delete is inserted into the
    # tombstones (the second file's failed run), and merged by its second
    # run, which found it there, as the fifth file's are
    for model in variants:
        ran = [sql for name, sql in statements if name == model]
        reads = [sql for sql in ran if re.search(rf"from \S+\.{model}__cdc_tombstones as k\b", sql)]
        assert len(reads) == 4, (model, len(reads))
        for verb, pattern, count in [
                ("insert", rf"insert into \S+\.{model}__cdc_tombstones\b", 1),
                ("merge", rf"merge into \S+\.{model}__cdc_tombstones\b", 2)]:
            assert len([sql for sql in ran if re.search(pattern, sql)]) == count, (model, verb)
        horizon = re.compile(rf"from \S+\.{model}__cdc_horizon\b")
        assert not [sql for sql in ran if horizon.search(sql)], model
    # into the table, a MERGE for the second, fourth and fifth file (the full
    # load is an insert, the third file's one change is too late to apply);
    # into the kept changes, one for each of those four files: a bloom
    # filter of the batch's keys on the table's scan only without the list
    for model, listed in [("slv_keys__listed", True), ("slv_keys__unlisted", False)]:
        for table, count in [(model, 3), (f"{model}__cdc_changes", 4)]:
            # (a MERGE's plan, and again under the command that ran it)
            scan = re.compile(rf"BatchScan \S+\.{table} \(")
            merges = [plan for plan in plans.values()
                      if "MergeRows" in plan and scan.search(plan) and "CommandResult" not in plan]
            assert len(merges) == count, (table, len(merges))
            assert all(("might_contain(" in plan) != listed for plan in merges), (table, merges[0])
    # the small tables of the default: no key list asked for, no semi join
    # of the stored rows, no bloom filter set or planned, the MERGEs done
    whole = "slv_keys__by_email"
    ran = [sql for name, sql in statements if name == whole]
    assert [sql for sql in ran if re.search(r"merge into \S+\.slv_keys__by_email as t\b", sql)]
    semi_join = STORED_ROWS_FILTERED
    for pattern, seen_in in [(r"\bas key_literal\b", "slv_keys__listed"),
                             (semi_join, "slv_keys__unlisted"),
                             (r"runtime\.bloomFilter", "slv_keys__unlisted"),
                             (r"`email_id` in \(", None)]:
        assert not [sql for sql in ran if re.search(pattern, sql)], (whole, pattern)
        seen = [sql for name, sql in statements if name == seen_in and re.search(pattern, sql)]
        assert seen_in is None or seen, (seen_in, pattern)
    assert not [plan for plan in plans.values()
                if re.search(rf"BatchScan \S+\.{whole}(__cdc_changes)? \(", plan)
                and "might_contain(" in plan]


def test_a_deleted_customer_holds_no_attribute_and_makes_no_version_while_deleted(
        spark, schema, tmp_path):
    """dim_customer from customer_master and customer_address, both kinds: a
    deleted-marker version holds no attribute, the address's included
    (README, "SCD2 dimensions"), starts at the delete, and a change of the
    address while the customer is deleted makes no version. The two tables'
    full loads are stamped 7 s apart (DMS stamps a row when it copies it):
    one version from 1900 in the history kind. Until 2026-12-05 the history
    kind's marker kept the address and the address's change made a second
    marker, and the snapshot kind dated the delete by the address's change."""
    landing = tmp_path / "landing"
    address = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "customer_id", "address_line", "city",
               "country", "row_audit_ts"]
    load, load_later = "2025-01-01 00:00:00.000000", "2025-01-01 00:00:07.000000"

    def write(table: str, name: str, header: list[str], rows: list[list[str]]) -> None:
        path = landing / "retail" / table / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows([header, *rows])

    # both kinds: the history kind's dim_customer and the snapshot kind's snp_customer
    scenario = Scenario(Path("."), landing, schema, vars={"build_snapshots": True},
                        target_path=tmp_path / "target")
    select = "+dim_customer +snp_customer"  # (no data tests: the facts' relationships)
    write("customer_master", "LOAD00000001.csv", HEADER,
          [["I", load, "", "1", "Ann", "Lee", "ACME", "ann@example.com", load]])
    write("customer_address", "LOAD00000001.csv", address,
          [["I", load_later, "", "1", "1 Main St", "Oslo", "NO", load_later]])
    scenario.build(select, data_tests=False)
    deleted, moved = "2025-01-01 01:00:00.000000", "2025-01-01 02:00:00.000000"
    write("customer_master", "20250101-010000000.csv", HEADER,
          [["D", deleted, "20250101010000000000000000000000001", "1", "Ann", "Lee", "ACME",
            "ann@example.com", deleted]])
    write("customer_address", "20250101-020000000.csv", address,
          [["U", moved, "20250101020000000000000000000000002", "1", "2 Side St", "Bergen", "NO",
            moved]])
    scenario.build(select, data_tests=False)

    def versions(table: str) -> list[tuple]:
        return [(r.rec_eff_dt.isoformat(sep=" "), r.rec_exp_dt.isoformat(sep=" "), r.is_deleted,
                 r.first_name, r.city, r.country)
                for r in spark.sql(f"select * from {table} where customer_id = 1 "
                                   "order by rec_eff_dt").collect()]

    gone = ("2025-01-01 01:00:00", "9999-12-31 00:00:00", True, None, None, None)
    assert versions(f"{schema}_dimensions.dim_customer") == [
        ("1900-01-01 00:00:00", "2025-01-01 01:00:00", False, "Ann", "Oslo", "NO"), gone]
    assert versions(f"{schema}_snapshots.snp_customer") == [
        ("2025-01-01 00:00:07", "2025-01-01 01:00:00", False, "Ann", "Oslo", "NO"), gone]


def test_a_dms_reload_keeps_the_history_before_it(spark, schema, tmp_path):
    """dim_product (history kind): a product loaded as A, changed to B, then
    the table reloaded by DMS (its LOAD file written again, later, holding
    C: a change the capture missed). The reload's row is ordered at its
    time: A from 1900 until the change, B until the reload, then C. (Before
    2026-12-05 every full-load row of a key started at 1900: the reload's C
    replaced A from 1900, or two versions shared a surrogate key.)"""
    landing = tmp_path / "landing"
    header = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "product_id", "product_name", "category",
              "unit_price", "row_audit_ts"]
    folder = landing / "retail" / "product"

    def write(name: str, rows: list[list[str]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / name, "w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows([header, *rows])

    load, changed, reloaded = ("2025-01-01 00:00:00.000000", "2025-01-01 01:00:00.000000",
                               "2025-01-02 00:00:00.000000")
    scenario = Scenario(Path("."), landing, schema, target_path=tmp_path / "target")
    write("LOAD00000001.csv", [["I", load, "", "1", "Hammer", "tools", "9.99", load]])
    scenario.build("+dim_product", data_tests=False)
    write("20250101-010000000.csv", [["U", changed, "20250101010000000000000000000000001", "1",
                                      "Hammer", "tools", "12.50", changed]])
    scenario.build("+dim_product", data_tests=False)
    write("LOAD00000001.csv", [["I", reloaded, "", "1", "Hammer", "tools", "13.00", reloaded]])
    scenario.build("+dim_product", data_tests=False)
    versions = [(r.rec_eff_dt.isoformat(sep=" "), r.rec_exp_dt.isoformat(sep=" "),
                 str(r.unit_price), r.is_current)
                for r in spark.sql(f"select * from {schema}_dimensions.dim_product "
                                   "where product_id = 1 order by rec_eff_dt").collect()]
    assert versions == [("1900-01-01 00:00:00", "2025-01-01 01:00:00", "9.99", False),
                        ("2025-01-01 01:00:00", "2025-01-02 00:00:00", "12.50", False),
                        ("2025-01-02 00:00:00", "9999-12-31 00:00:00", "13.00", True)], versions


def test_tables_made_before_take_the_projects_table_settings(spark, schema, tmp_path):
    """A CDC table, its kept changes and a dimension whose properties differ
    from the project's (made before a setting changed: here altered by
    hand) take them on the next run that writes to them: the tblproperties
    of dbt_project.yml and each one's write mode (cdc_write_mode's default,
    the dimensions' replace_write_mode). A run after that neither alters
    them nor reads them (dbt's listing shows them already there)."""
    import yaml
    from lakehouse_cdc import PROJECT_ROOT

    project = yaml.safe_load((PROJECT_ROOT / "dbt_project.yml").read_text())["models"][
        "lakehouse_cdc"]
    wanted = {name: str(value) for name, value in project["+tblproperties"].items()}
    dim_mode = project["dimensions"]["+meta"]["replace_write_mode"]
    modes = ("write.merge.mode", "write.update.mode", "write.delete.mode")
    tables = {f"{schema}_silver.slv_retail__product": "merge-on-read",
              f"{schema}_silver.slv_retail__product__cdc_changes": "merge-on-read",
              f"{schema}_dimensions.dim_product": dim_mode}
    landing = tmp_path / "landing"
    folder = landing / "retail" / "product"
    header = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "product_id", "product_name", "category",
              "unit_price", "row_audit_ts"]

    def write(name: str, price: str, seq: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        ts = f"2025-01-01 0{seq}:00:00.000000"
        with open(folder / name, "w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows(
                [header, ["U" if seq else "I", ts, f"2025010100000000000000000000000000{seq}" if seq
                          else "", "1", "Hammer", "tools", price, ts]])

    def properties(table: str) -> dict[str, str]:
        return {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}

    scenario = Scenario(Path("."), landing, schema, target_path=tmp_path / "target")
    write("LOAD00000001.csv", "9.99", 0)
    scenario.build("+dim_product", data_tests=False)
    other = {"merge-on-read": "copy-on-write", "copy-on-write": "merge-on-read"}
    for table, mode in tables.items():
        spark.sql(f"alter table {table} unset tblproperties ({', '.join(map(repr, wanted))})")
        spark.sql(f"alter table {table} set tblproperties ("
                  + ", ".join(f"'{m}' = '{other[mode]}'" for m in modes) + ")")
        assert not set(wanted.items()) & set(properties(table).items()), table

    write("20250101-010000000.csv", "12.50", 1)
    scenario.build("+dim_product", data_tests=False)
    for table, mode in tables.items():
        held = properties(table)
        assert {name: held.get(name) for name in [*wanted, *modes]} == {
            **wanted, **dict.fromkeys(modes, mode)}, table

    # neither an alter nor a read of the properties (which the listing shows)
    write("20250101-020000000.csv", "13.00", 2)
    with failing_statements(r"(?i)\bset\s+tblproperties\b"
                            r"|\bshow\s+tblproperties\s+\S*(__cdc_changes|dim_product)\b"):
        scenario.build("+dim_product", data_tests=False)
    assert [str(r.unit_price) for r in spark.sql(
        f"select unit_price from {schema}_dimensions.dim_product where product_id = 1 "
        "order by rec_eff_dt").collect()] == ["9.99", "12.50", "13.00"]


def test_a_dimension_reads_its_applied_loads_from_file_bounds_or_else_scans(spark, schema,
                                                                          tmp_path):
    """dim_product's incremental run takes the newest log load it has applied
    from the upper bounds Iceberg keeps for each data file, without a scan
    of the table; where a file holds values but no bound (here: metrics
    turned off on the table), it scans instead. The history follows every
    change either way."""
    landing = tmp_path / "landing"
    folder = landing / "retail" / "product"
    header = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "product_id", "product_name", "category",
              "unit_price", "row_audit_ts"]
    stamps = ["2025-01-01 00:00:00.000000", "2025-01-01 01:00:00.000000",
              "2025-01-01 02:00:00.000000"]

    def write(name: str, price: str, seq: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / name, "w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows(
                [header, ["U" if seq else "I", stamps[seq],
                          f"2025010100000000000000000000000000{seq}" if seq else "", "1",
                          "Hammer", "tools", price, stamps[seq]]])

    scan = r"max\(_dim_source_loaded_at\)"
    dim = f"{schema}_dimensions.dim_product"
    scenario = Scenario(Path("."), landing, schema, target_path=tmp_path / "target")
    write("LOAD00000001.csv", "9.99", 0)
    scenario.build("+dim_product", data_tests=False)
    # files written from now on carry no column bounds
    spark.sql(f"alter table {dim} set tblproperties ('write.metadata.metrics.default' = 'none')")
    write("20250101-010000000.csv", "12.50", 1)
    with failing_statements(scan):  # the first build's files have bounds: no scan
        scenario.build("+dim_product", data_tests=False)
    write("20250101-020000000.csv", "13.00", 2)
    with failing_statements(scan), pytest.raises(DbtError, match="stopped here by the test"):
        scenario.build("+dim_product", data_tests=False)
    scenario.build("+dim_product", data_tests=False)
    versions = [(str(r.rec_eff_dt), str(r.rec_exp_dt), str(r.unit_price), r.is_current)
                for r in spark.sql(f"select * from {dim} where product_id = 1 "
                                   "order by rec_eff_dt").collect()]
    assert versions == [("1900-01-01 00:00:00", "2025-01-01 01:00:00", "9.99", False),
                        ("2025-01-01 01:00:00", "2025-01-01 02:00:00", "12.50", False),
                        ("2025-01-01 02:00:00", "9999-12-31 00:00:00", "13.00", True)], versions
