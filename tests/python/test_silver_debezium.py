"""Debezium instead of DMS: the same source YAML with format 'debezium' reads
ExtractNewRecordState JSON lines (op c/r/u/d, source.ts_ms, LSN, epoch
timestamps), and the same silver models reach the true state after every
batch, with every trap of the DMS runs and the bad rows quarantined."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from cdc_helpers import (
    SILVER,
    STATE_MODELS,
    Scenario,
    assert_scenario_has_file_traps,
    assert_states_match_truth,
    quarantined_and_rejected,
    silver_state,
)
from lakehouse_cdc.simulator import TABLES, read_files

#: two CDC batches of 75 changes (each batch costs a build of five models);
#: the columns added at batch 2 arrive in the last one
KNOBS = {"seed": 17, "scale": 50, "batches": 2, "changes_per_batch": 75,
         "multi_change_rate": 0.3, "tie_rate": 0.1, "late_rate": 0.1, "redeliver_rate": 0.1,
         "malformed_rate": 0.03, "add_column_at_batch": 2, "format": "debezium"}
BATCHES = range(KNOBS["batches"] + 1)


@pytest.fixture(scope="module")
def debezium(spark, simulated, tmp_path_factory):
    sim = simulated(**KNOBS)
    assert any(Path(f.file).suffix == ".json" for f in read_files(sim))
    base = tmp_path_factory.mktemp("debezium")
    scenario = Scenario(sim, base / "landing", "t_silver_dbz",
                        vars={"bronze_format": "debezium"}, target_path=base / "target",
                        select=STATE_MODELS)
    states = []
    for batch in BATCHES:
        scenario.land(batch)
        scenario.build(data_tests=batch == BATCHES[-1])  # (states: every batch's, below)
        states.append({t: silver_state(spark, scenario.schema, t) for t in TABLES})
    return scenario, states


def test_debezium_scenario_holds_late_and_redelivered_files_and_every_reject(simulated):
    """The comparison below only proves something if its batches carry the
    traps: late and redelivered files, and rows of every reject reason."""
    assert_scenario_has_file_traps(simulated(**KNOBS))


@pytest.mark.parametrize("table", list(TABLES))
def test_debezium_silver_equals_truth_after_every_batch(debezium, table):
    scenario, states = debezium
    assert_states_match_truth(scenario.sim_dir, states, table)


def test_debezium_bad_rows_quarantined_and_all_rows_accounted(debezium, spark):
    scenario, _ = debezium
    models = "', '".join(SILVER.values())
    got, expected = quarantined_and_rejected(spark, scenario)
    assert expected, "the scenario has no malformed rows"
    assert got == expected
    read = Counter()
    for row in spark.sql(f"select * from {scenario.schema}_silver.cdc_run_audit "
                         f"where model_name in ('{models}')").collect():
        assert row.rows_read == row.rows_applied + row.rows_superseded + row.rows_quarantined
        read[row.model_name] += row.rows_read
    written = Counter()
    for entry in read_files(scenario.sim_dir):
        written[SILVER[entry.table]] += entry.rows
    assert read == written


def _json_lines(path: Path, rows: list[dict]) -> None:
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_debezium_changes_order_by_lsn_not_commit_clock(spark, schema, tmp_path):
    """Two updates of one product whose source.ts_ms runs backwards against
    the log: the one later in the log (higher LSN) wins, as in the database."""
    landing = tmp_path / "landing"
    folder = landing / "retail" / "product"

    def row(op, ts_ms, lsn, name, price):
        return {"product_id": 1, "product_name": name, "category": "Tools", "unit_price": price,
                "row_audit_ts": ts_ms * 1000, "__op": op, "__source_ts_ms": ts_ms,
                "__lsn": lsn, "__deleted": "false"}

    _json_lines(folder / "LOAD00000001.json", [row("r", 1735689600000, 0, "Hammer", "9.50")])
    _json_lines(folder / "20250101-010000000.json", [
        row("u", 1735693200500, 101, "Hammer v2", "10.00"),
        row("u", 1735693200400, 102, "Hammer v3", "11.00"),  # clock went back 100 ms
    ])
    scenario = Scenario(Path("."), landing, schema, vars={"bronze_format": "debezium"},
                        target_path=tmp_path / "target")
    scenario.build("slv_retail__product")
    rows = spark.sql(f"select product_name, unit_price, _cdc_change_seq "
                     f"from {schema}_silver.slv_retail__product").collect()
    assert [(r.product_name, str(r.unit_price), int(r._cdc_change_seq)) for r in rows] == [
        ("Hammer v3", "11.00", 102)]
