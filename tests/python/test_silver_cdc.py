"""Silver equals the source database's true state after every batch, whatever
order, repetition or lateness the change files arrive in (hard and soft
deletes); bad rows are quarantined and every input row is accounted for."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest
from cdc_helpers import (
    SILVER,
    Scenario,
    assert_scenario_has_file_traps,
    assert_states_match_truth,
    quarantined_and_rejected,
    silver_state,
)
from lakehouse_cdc.simulator import TABLES, read_files, read_rejects, read_versions

#: every trap at a rate high enough to appear several times in a small run
#: (three CDC batches of 80 changes: each batch costs a build of five models;
#: test_scenario_contains_every_trap checks that they still hold every trap)
TRAPS = {"seed": 7, "scale": 60, "batches": 3, "changes_per_batch": 80,
         "multi_change_rate": 0.3, "tie_rate": 0.1, "late_rate": 0.1, "redeliver_rate": 0.1,
         "malformed_rate": 0.03, "add_column_at_batch": 2}
BATCHES = range(TRAPS["batches"] + 1)
#: per scenario schema, Spark's adaptive execution setting after each build
ADAPTIVE_AFTER: dict[str, list[str]] = {}
#: the soft-delete twin applies the same changes through the same macros; it
#: builds the two tables that between them hold every trap of TRAPS (a single
#: key with all of them; a composite key with the most deletes and deletes
#: followed by re-inserts), checked by test_scenario_contains_every_trap.
#: Every batch of these tests is smaller than cdc_adaptive_min_bytes, so the
#: hard-delete runs have Spark's adaptive execution off; the soft twin keeps
#: it on (0), as a batch of 1 MiB or more has it
SOFT_TABLES = ("customer_master", "order_items")


def _run(spark, sim: Path, base: Path, schema: str, tables=tuple(TABLES),
         **vars) -> tuple[Scenario, list[dict]]:
    scenario = Scenario(sim, base / "landing", schema, vars=vars, target_path=base / "target",
                        select=" ".join(SILVER[t] for t in tables))
    states = []
    for batch in BATCHES:
        scenario.land(batch)
        scenario.build(data_tests=batch == BATCHES[-1])  # (states: every batch's, below)
        ADAPTIVE_AFTER.setdefault(schema, []).append(spark.conf.get("spark.sql.adaptive.enabled"))
        states.append({t: silver_state(spark, schema, t,
                                       "not is_deleted" if vars.get("cdc_delete_mode") == "soft"
                                       else "true")
                       for t in tables})
    return scenario, states


@pytest.fixture(scope="module")
def hard(spark, simulated, tmp_path_factory):
    return _run(spark, simulated(**TRAPS), tmp_path_factory.mktemp("hard"), "t_silver_hard")


@pytest.fixture(scope="module")
def soft(spark, simulated, tmp_path_factory):
    return _run(spark, simulated(**TRAPS), tmp_path_factory.mktemp("soft"), "t_silver_soft",
                SOFT_TABLES, cdc_delete_mode="soft", cdc_adaptive_min_bytes=0)


def test_scenario_contains_every_trap(simulated):
    """The comparison below only proves something if the traps are there, in
    the tables of the soft-delete twin too."""
    sim = simulated(**TRAPS)
    assert_scenario_has_file_traps(sim)
    found: dict[str, Counter] = defaultdict(Counter)
    for table, spec in TABLES.items():
        per_key = defaultdict(list)
        for v in read_versions(sim, table):
            per_key[tuple(v[k] for k in spec.key)].append(v)
        for versions in per_key.values():
            by_batch = defaultdict(list)
            for v in versions:
                by_batch[v["batch"]].append(v)
            for batch_versions in by_batch.values():
                if len(batch_versions) > 1:
                    found[table]["several changes to one key in one batch"] += 1
                ops = [v["op"] for v in sorted(batch_versions, key=lambda v: (
                    v["dms_commit_ts"], v["AR_H_CHANGE_SEQ"]))]
                if "D" in ops and "I" in ops[ops.index("D"):]:
                    found[table]["delete then re-insert in one batch"] += 1
            stamps = Counter(v["dms_commit_ts"] for v in versions if v["batch"] != "0")
            if any(n > 1 for n in stamps.values()):
                found[table]["same-key tie on commit time"] += 1
            deletes = [v for v in versions if v["op"] == "D"]
            for u in versions:
                if u["op"] == "U" and any(
                        d["dms_commit_ts"] > u["dms_commit_ts"]
                        and int(d["batch"]) < int(u["batch"]) for d in deletes):
                    found[table]["late update older than a delete"] += 1
    soft = sum((found[t] for t in SOFT_TABLES), Counter())
    for trap in ("several changes to one key in one batch", "delete then re-insert in one batch",
                 "same-key tie on commit time", "late update older than a delete"):
        assert soft[trap], f"the soft-delete tables lack: {trap} ({dict(found)})"


@pytest.mark.parametrize("table", list(TABLES))
def test_hard_delete_silver_equals_truth_after_every_batch(hard, table):
    scenario, states = hard
    assert_states_match_truth(scenario.sim_dir, states, table)


@pytest.mark.parametrize("table", SOFT_TABLES)
def test_soft_delete_silver_equals_truth_after_every_batch(soft, spark, table):
    scenario, states = soft
    assert_states_match_truth(scenario.sim_dir, states, table)
    # deleted keys are kept, flagged, with the commit time of their delete
    spec = TABLES[table]
    last = {}
    for v in read_versions(scenario.sim_dir, table):
        key = tuple(v[k] for k in spec.key)
        if key not in last or (v["dms_commit_ts"], v["AR_H_CHANGE_SEQ"]) > (
                last[key]["dms_commit_ts"], last[key]["AR_H_CHANGE_SEQ"]):
            last[key] = v
    expected_deleted = {k: v["dms_commit_ts"] for k, v in last.items() if v["op"] == "D"}
    keys = ", ".join(spec.key)
    rows = {}
    for row in spark.sql(
            f"select {keys}, date_format(deleted_at, 'yyyy-MM-dd HH:mm:ss.SSSSSS') deleted_at "
            f"from {scenario.schema}_silver.{SILVER[table]} where is_deleted").collect():
        rows[tuple(str(row[k]) for k in spec.key)] = row.deleted_at
    assert rows == expected_deleted
    assert expected_deleted, f"no deletes of {table} in the scenario"


def test_runs_leave_adaptive_execution_as_they_found_it(hard, soft, spark):
    """The hard-delete runs turned Spark's adaptive execution off for their
    small batches, and the soft twin kept it on: either way the session that
    dbt shares with the tests has it on again after every build."""
    for scenario, _ in (hard, soft):
        assert ADAPTIVE_AFTER[scenario.schema] == ["true"] * len(BATCHES), scenario.schema


def test_quarantine_holds_exactly_the_bad_rows(hard, spark):
    scenario, _ = hard
    got, expected = quarantined_and_rejected(spark, scenario)
    assert got == expected


def test_every_input_row_is_accounted_for(hard, spark):
    scenario, _ = hard
    models = "', '".join(SILVER.values())  # the change-log models read the same files
    audit = spark.sql(f"select * from {scenario.schema}_silver.cdc_run_audit "
                      f"where model_name in ('{models}')").collect()
    assert audit
    for row in audit:
        assert row.rows_read == row.rows_applied + row.rows_superseded + row.rows_quarantined, row
    read = Counter()
    for row in audit:
        read[row.model_name] += row.rows_read
    written = Counter()
    for entry in read_files(scenario.sim_dir):
        written[SILVER[entry.table]] += entry.rows
    assert read == written
    quarantined = Counter()
    for row in audit:
        quarantined[row.model_name] += row.rows_quarantined
    assert sum(quarantined.values()) == len(read_rejects(scenario.sim_dir))
    # each run's audit row names the table's snapshot after that run: the
    # newest one committed before the row (read from the table's history)
    for model in SILVER.values():
        table = f"{scenario.schema}_silver.{model}"
        snapshots = spark.sql(f"select snapshot_id, committed_at from {table}.snapshots").collect()
        for row in (r for r in audit if r.model_name == model):
            newest = max((s for s in snapshots if s.committed_at <= row.finished_at),
                         key=lambda s: s.committed_at)
            assert row.snapshot_id == newest.snapshot_id, (model, row.run_id, row.snapshot_id)


def test_runs_leave_no_change_row_in_scratch_files(hard, lakehouse_home):
    """Each run empties its batch's scratch folder (the CSV records written
    before the parse, the ranked rows, the rows with their outcomes): no
    change row, raw line included, outlives the run on disk. Read here with
    pyarrow, not through Spark."""
    import pyarrow.parquet as pq

    scenario, _ = hard
    scratch = lakehouse_home / "warehouse" / "_cdc_scratch" / f"{scenario.schema}_silver"
    batches = {f"{SILVER[t]}__cdc_batch" for t in TABLES}
    assert batches <= {p.name for p in scratch.iterdir()}, "no batch folder: the path is wrong"
    left = {str(path.relative_to(scratch)): pq.ParquetFile(path).metadata.num_rows
            for path in scratch.rglob("*.parquet")}
    assert {path: rows for path, rows in left.items() if rows} == {}


def test_build_without_new_files_changes_nothing(hard, spark):
    scenario, states = hard
    def snapshot_ids():
        return {t: spark.sql(f"select snapshot_id from {scenario.schema}_silver.{SILVER[t]}"
                             f".snapshots order by committed_at").collect() for t in TABLES}
    def bookkeeping():
        return [spark.sql(f"select count(*) from {scenario.schema}_silver.{t}").collect()[0][0]
                for t in ("cdc_run_audit", "cdc_file_log", "cdc_quarantine")]
    def model_views():  # the temporary views dbt-spark makes of an incremental model's SQL
        return {r.viewName for r in spark.sql("show views like '*__dbt_tmp'").collect()}
    for view in model_views():
        spark.sql(f"drop view {view}")
    before, kept = snapshot_ids(), bookkeeping()
    scenario.build()
    assert snapshot_ids() == before
    for table in TABLES:
        assert silver_state(spark, scenario.schema, table) == states[-1][table]
    # nothing to do costs no write: no audit row, no file logged
    assert bookkeeping() == kept
    # and no parse of the model's SQL: its view is not even created
    assert model_views() == set()


def test_redelivered_file_is_reapplied_without_effect(hard, spark):
    """Landing every file once more (new modification times) changes no row."""
    scenario, states = hard
    for batch in BATCHES:
        scenario.land(batch)
    scenario.build()
    for table in TABLES:
        assert silver_state(spark, scenario.schema, table) == states[-1][table]


def test_keep_changes_set_later_keeps_from_then_on_and_full_refresh_fills_it(
        spark, simulated, schema, project_copy, tmp_path):
    """`cdc_keep_changes` turned on for a model already built: its kept changes
    start with the next run's files; `--full-refresh` fills them from every
    landed file (the files are read from the landing folder, not the code)."""
    from lakehouse_cdc.dbt_runner import run_dbt
    from lakehouse_cdc.simulator import land_batch

    sim = simulated(seed=11, scale=20, batches=1, changes_per_batch=20, malformed_rate=0,
                    redeliver_rate=0, late_rate=0, tie_rate=0)
    project, landing = project_copy(), tmp_path / "landing"
    model = project / "models" / "silver" / "retail" / "slv_retail__orders.sql"

    def run(*extra: str) -> None:
        run_dbt(["run", "--select", "slv_retail__orders", *extra], project_dir=project,
                schema=schema, vars={"landing_root": str(landing)},
                target_path=tmp_path / "target")

    def orders(landed: list[Path]) -> set[str]:
        return {p.name for p in landed if p.parent.name == "orders"}

    def kept() -> set[str]:
        rows = spark.sql(f"select distinct _cdc_file from {schema}_silver."
                         "slv_retail__orders__cdc_changes").collect()
        return {r._cdc_file.rsplit("/", 1)[1] for r in rows}

    first = orders(land_batch(sim, landing, 0))
    run()
    assert not spark.catalog.tableExists(f"{schema}_silver.slv_retail__orders__cdc_changes")
    text, before = model.read_text(), "{{ config(unique_key='order_id') }}"
    assert before in text
    after = "{{ config(unique_key='order_id', meta={'cdc_keep_changes': true}) }}"
    model.write_text(text.replace(before, after))
    second = orders(land_batch(sim, landing, 1))
    assert first and second and not first & second
    run()
    assert kept() == second
    run("--full-refresh")
    assert kept() == first | second
