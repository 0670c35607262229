"""`lakehouse add-table`: a table the simulator has never seen (a `pos.store`
table, CSV with a header row) lands; the command writes its source YAML,
silver model, docs and tests; `dbt build` of it passes with no hand edit and
silver holds the changes applied, computed here from the rows written."""

from __future__ import annotations

import csv
import json
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from lakehouse_cdc.add_table import AddTableError, add_table, infer_type
from lakehouse_cdc.cli import main as cli_main
from lakehouse_cdc.dbt_runner import run_dbt

HEADER = ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "store_id", "store_name", "city",
          "opened_on", "floor_area", "is_open", "updated_at"]
LOAD = [
    ["I", "2025-03-01 00:00:00.000000", "", "10", "Main St", "Oslo", "2019-04-01", "120.50",
     "true", "2025-02-01 10:00:00.000000"],
    ["I", "2025-03-01 00:00:00.000000", "", "11", "Harbour, Pier 2", "Bergen", "2020-06-15",
     "80.25", "true", "2025-02-01 10:00:00.000000"],
    ["I", "2025-03-01 00:00:00.000000", "", "12", "Old Town", "NULL", "2021-01-10", "95.00",
     "false", "2025-02-01 10:00:00.000000"],
]
CDC = [
    ["U", "2025-03-02 09:00:00.000001", "20250302090000000000000000000000001", "10",
     "Main Street", "Oslo", "2019-04-01", "130.00", "true", "2025-03-02 09:00:00.000000"],
    ["D", "2025-03-02 09:00:00.000002", "20250302090000000000000000000000002", "11",
     "Harbour, Pier 2", "Bergen", "2020-06-15", "80.25", "true", "2025-03-02 09:00:00.000000"],
    ["I", "2025-03-02 09:00:00.000003", "20250302090000000000000000000000003", "13",
     "Airport", "Stavanger", "2025-03-02", "60.00", "true", "2025-03-02 09:00:00.000000"],
    ["U", "2025-03-02 09:00:00.000004", "20250302090000000000000000000000004", "13",
     "Airport \"Sola\"", "Stavanger", "2025-03-02", "60.00", "true",
     "2025-03-02 09:00:01.000000"],
]


def _write(folder, name, rows, header=HEADER):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(([header] if header else []) + rows)


def _truth() -> dict[int, tuple]:
    """The last change per key, in (phase, commit time, sequence) order; deletes remove."""
    state: dict[int, tuple] = {}
    changes = [(0, *r) for r in LOAD] + [(1, *r) for r in CDC]
    for _, op, _ts, _seq, *values in sorted(changes, key=lambda c: (c[0], c[2], c[3])):
        key = int(values[0])
        if op == "D":
            state.pop(key, None)
        else:
            state[key] = (values[1], None if values[2] == "NULL" else values[2], values[3],
                          Decimal(values[4]), values[5] == "true")
    return state


def test_add_table_on_an_unseen_folder_builds_and_tests_green(spark, project_copy, tmp_path):
    project = project_copy()
    landing = tmp_path / "landing"
    folder = landing / "pos" / "store"
    _write(folder, "LOAD00000001.csv", LOAD)
    _write(folder, "20250302-090000500.csv", CDC)

    assert cli_main(["add-table", str(folder), "--project-dir", str(project),
                     "--landing-root", str(landing)]) == 0

    sources = yaml.safe_load((project / "models/bronze/pos/_pos__sources.yml").read_text())
    (source,) = sources["sources"]
    (table,) = source["tables"]
    assert (source["name"], table["name"]) == ("dms_pos", "store")
    assert table["meta"]["external"] == {"location": "pos/store", "header": True}
    types = {c["name"]: c.get("data_type") for c in table["columns"]
             if not c["name"].startswith("_cdc_")}
    assert types == {"store_id": "bigint", "store_name": "string", "city": "string",
                     "opened_on": "date", "floor_area": "decimal(18,2)", "is_open": "boolean",
                     "updated_at": "timestamp"}
    assert (project / "models/silver/pos/slv_pos__store.sql").exists()

    schema = f"t_add_table_{uuid.uuid4().hex[:6]}"
    result = run_dbt(["build", "--select", "slv_pos__store"], project_dir=project,
                     schema=schema, vars={"landing_root": str(landing)},
                     target_path=tmp_path / "target")
    tests = {r.node.name: str(r.status) for r in result.result.results
             if r.node.resource_type == "test"}
    kinds = {name.split("_slv_")[0] for name in tests}
    assert {"primary_key", "accepted_values"} <= kinds, tests
    assert set(tests.values()) == {"pass"}, tests

    rows = spark.sql(f"select store_id, store_name, city, opened_on, floor_area, is_open "
                     f"from {schema}_silver.slv_pos__store").collect()
    got = {r.store_id: (r.store_name, r.city, r.opened_on.isoformat(), r.floor_area, r.is_open)
           for r in rows}
    assert got == _truth()


def test_declared_columns_parquet_and_errors(tmp_path, project_copy):
    """Without a header the columns come from --columns (header: false); a
    Parquet folder gives its schema; a folder with no unique column asks for
    --key; the lead's source file is never edited."""
    project = project_copy()
    landing = tmp_path / "landing"
    plain = landing / "crm" / "visit"
    _write(plain, "LOAD00000001.csv",
           [["I", "2025-01-01 00:00:00", "", "1", "7", "web"],
            ["I", "2025-01-01 00:00:00", "", "2", "7", "shop"]], header=None)
    written = add_table(plain, project_dir=project, landing_root=landing,
                        columns=["visit_id", "customer_id", "channel"])
    (table,) = yaml.safe_load(written.source_yaml.read_text())["sources"][0]["tables"]
    assert table["meta"]["external"] == {"location": "crm/visit", "header": False}
    assert [c["name"] for c in table["columns"] if not c["name"].startswith("_cdc_")] == [
        "visit_id", "customer_id", "channel"]
    assert written.key == ["visit_id"]

    parquet = landing / "crm" / "ticket"
    parquet.mkdir(parents=True)
    pq.write_table(pa.table({"Op": ["I", "I"], "dms_commit_ts": ["2025-01-01 00:00:00"] * 2,
                             "AR_H_CHANGE_SEQ": ["", ""], "ticket_no": ["5", "5"],
                             "line": ["1", "1"], "opened_at": ["2025-01-01 08:00:00"] * 2}),
                   parquet / "LOAD00000001.parquet")
    with pytest.raises(AddTableError, match="--key"):
        add_table(parquet, project_dir=project, landing_root=landing)
    written = add_table(parquet, project_dir=project, landing_root=landing,
                        key=["ticket_no", "line"])
    sources = yaml.safe_load(written.source_yaml.read_text())["sources"][0]
    assert [t["name"] for t in sources["tables"]] == ["visit", "ticket"]
    ticket = sources["tables"][1]
    assert ticket["meta"]["external"]["header"] is False
    assert {c["name"]: c.get("data_type") for c in ticket["columns"]
            if not c["name"].startswith("_cdc_")} == {
        "ticket_no": "bigint", "line": "bigint", "opened_at": "timestamp"}
    models = yaml.safe_load(written.model_yaml.read_text())["models"]
    assert models[1]["data_tests"] == [
        {"primary_key": {"arguments": {"columns": ["ticket_no", "line"]}}}]

    retail = landing / "retail" / "store"
    _write(retail, "LOAD00000001.csv", LOAD)
    before = (project / "models/bronze/dms/_dms__sources.yml").read_text()
    with pytest.raises(AddTableError, match="_dms__sources.yml"):
        add_table(retail, project_dir=project, landing_root=landing, system="retail")
    assert (project / "models/bronze/dms/_dms__sources.yml").read_text() == before


def test_segment_load_files_tombstones_schema_events_and_a_bom(tmp_path, project_copy):
    """A parallel full load's SEGMENTn_LOAD file is a full-load file (a
    headerless one without Op gives full_load_op: absent, as bronze's default
    load_pattern reads it); Debezium tombstones (null), schema-change events
    and a byte-order mark are not taken for rows or columns."""
    project = project_copy()
    landing = tmp_path / "landing"
    visits = landing / "crm" / "visit"
    _write(visits, "SEGMENT1_LOAD00000001.csv",
           [["2025-01-01 00:00:00", "", "1", "web"], ["2025-01-01 00:00:00", "", "2", "shop"]],
           header=None)
    _write(visits, "20250102-000000000.csv",
           [["U", "2025-01-02 00:00:00", "20250102000000000000000000000000001", "1", "app"]],
           header=None)
    written = add_table(visits, project_dir=project, landing_root=landing,
                        columns=["visit_id", "channel"])
    (table,) = yaml.safe_load(written.source_yaml.read_text())["sources"][0]["tables"]
    assert table["meta"]["external"] == {"location": "crm/visit", "header": False,
                                         "full_load_op": "absent"}

    # a header's Op is looked for in every file, whichever sorts first: the
    # CDC file (with Op) sorts before the full-load file (without)
    calls = landing / "crm" / "call"
    _write(calls, "LOAD00000001.csv", [["2025-01-01 00:00:00", "", "1", "a"]],
           header=["dms_commit_ts", "AR_H_CHANGE_SEQ", "call_id", "topic"])
    _write(calls, "20250102-000000000.csv",
           [["U", "2025-01-02 00:00:00", "20250102000000000000000000000000001", "1", "b"]],
           header=["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ", "call_id", "topic"])
    written = add_table(calls, project_dir=project, landing_root=landing)
    call = yaml.safe_load(written.source_yaml.read_text())["sources"][0]["tables"][1]
    assert (call["meta"]["external"].get("full_load_op"),
            call["meta"]["external"].get("cdc_op")) == ("absent", None), call
    # CdcInsertsOnly: headerless CDC files without Op
    clicks = landing / "crm" / "click"
    _write(clicks, "LOAD00000001.csv", [["I", "2025-01-01 00:00:00", "", "1", "home"]],
           header=None)
    _write(clicks, "20250102-000000000.csv",
           [["2025-01-02 00:00:00", "20250102000000000000000000000000001", "2", "cart"]],
           header=None)
    # a file with Op written before the source added its last column: not "no Op"
    older = landing / "crm" / "older"
    _write(older, "LOAD00000001.csv", [["I", "2025-01-01 00:00:00", "", "1"]], header=None)
    _write(older, "20250102-000000000.csv",
           [["U", "2025-01-02 00:00:00", "20250102000000000000000000000000001", "1", "cart"]],
           header=None)
    written = add_table(older, project_dir=project, landing_root=landing,
                        columns=["click_id", "page"])
    kept = {t["name"]: t for t in yaml.safe_load(
        written.source_yaml.read_text())["sources"][0]["tables"]}["older"]
    assert "full_load_op" not in kept["meta"]["external"], kept
    assert "cdc_op" not in kept["meta"]["external"], kept
    written = add_table(clicks, project_dir=project, landing_root=landing,
                        columns=["click_id", "page"])
    click = {t["name"]: t for t in yaml.safe_load(
        written.source_yaml.read_text())["sources"][0]["tables"]}["click"]
    assert (click["meta"]["external"].get("full_load_op"),
            click["meta"]["external"].get("cdc_op")) == (None, "absent"), click

    items = landing / "shop" / "item"
    items.mkdir(parents=True)
    ddl = json.dumps({"ddl": "ALTER TABLE item ADD COLUMN y int", "tableChanges": []})
    rows = [json.dumps({"item_id": key, "name": name, "__op": "r", "__source_ts_ms": 1,
                        "__lsn": key, "__deleted": "false"})
            for key, name in ((1, "a"), (2, "b"))]
    wrapped = [json.dumps({"schema": None, "payload": payload}) for payload in (
        None, {"ddl": "ALTER TABLE item ADD COLUMN z int", "tableChanges": []})]
    (items / "LOAD00000001.json").write_text(
        "\ufeff" + "\n".join([ddl, "null", *wrapped, *rows]) + "\n", encoding="utf-8")
    written = add_table(items, project_dir=project, landing_root=landing)
    (table,) = yaml.safe_load(written.source_yaml.read_text())["sources"][0]["tables"]
    assert {c["name"]: c.get("data_type") for c in table["columns"]
            if not c["name"].startswith("_cdc_")} == {"item_id": "bigint", "name": "string"}
    assert written.key == ["item_id"]
    assert "decimal_handling" not in table["meta"]["external"], table
    # decimals written as text: the connector's decimal.handling.mode is
    # string (or double), which bronze must be told (precise is base64)
    prices = landing / "shop" / "price"
    prices.mkdir(parents=True)
    (prices / "LOAD00000001.json").write_text(json.dumps(
        {"price_id": 1, "amount": "12.50", "__op": "r", "__source_ts_ms": 1, "__lsn": 1,
         "__deleted": "false"}) + "\n")
    written = add_table(prices, project_dir=project, landing_root=landing)
    price = {t["name"]: t for t in yaml.safe_load(
        written.source_yaml.read_text())["sources"][0]["tables"]}["price"]
    assert {c["name"]: c.get("data_type") for c in price["columns"]}["amount"].startswith("decimal")
    assert price["meta"]["external"]["decimal_handling"] == "string", price
    # a schema block's Connect Decimal (decimal.handling.mode=precise): the
    # values are base64 ("BOI=" is 1250, 12.50 at scale 2), so the type comes
    # from the field's parameters and bronze is told to decode them
    fees = landing / "shop" / "fee"
    fees.mkdir(parents=True)
    schema = {"type": "struct", "fields": [
        {"type": "int64", "field": "fee_id"},
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
         "parameters": {"scale": "2", "connect.decimal.precision": "10"}, "field": "amount"},
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
         "parameters": {"scale": "0"}, "field": "units"}]}
    (fees / "LOAD00000001.json").write_text(json.dumps({"schema": schema, "payload": {
        "fee_id": 1, "amount": "BOI=", "units": "Bw==", "__op": "r", "__source_ts_ms": 1,
        "__lsn": 1, "__deleted": "false"}}) + "\n")
    written = add_table(fees, project_dir=project, landing_root=landing)
    fee = {t["name"]: t for t in yaml.safe_load(
        written.source_yaml.read_text())["sources"][0]["tables"]}["fee"]
    assert {c["name"]: c.get("data_type") for c in fee["columns"]
            if not c["name"].startswith("_cdc_")} == {
        "fee_id": "bigint", "amount": "decimal(10,2)", "units": "decimal(38,0)"}, fee
    assert fee["meta"]["external"]["decimal_handling"] == "precise", fee
    assert written.notes == [], written.notes
    # the same schema with the converter's decimal.format=NUMERIC: the values
    # are JSON numbers, read as written (string); a precision beyond Spark's
    # 38 is declared 38 and said; a scale beyond it, or both forms, refused
    tolls = landing / "shop" / "toll"
    tolls.mkdir(parents=True)
    wide = dict(schema, fields=[*schema["fields"][:2], {
        **schema["fields"][2], "parameters": {"scale": "4", "connect.decimal.precision": "65"}}])
    (tolls / "LOAD00000001.json").write_text(json.dumps({"schema": wide, "payload": {
        "fee_id": 1, "amount": 12.50, "units": 7, "__op": "r", "__source_ts_ms": 1,
        "__lsn": 1, "__deleted": "false"}}) + "\n")
    written = add_table(tolls, project_dir=project, landing_root=landing)
    toll = {t["name"]: t for t in yaml.safe_load(
        written.source_yaml.read_text())["sources"][0]["tables"]}["toll"]
    assert {c["name"]: c.get("data_type") for c in toll["columns"]}["units"] == "decimal(38,4)"
    assert toll["meta"]["external"]["decimal_handling"] == "string", toll
    assert written.notes == ["units: decimal(65,4) at the source, declared decimal(38,4) (Spark's "
                             "largest): a value of more than 34 integer digits is quarantined"]
    with (tolls / "20250101-000000000.json").open("w") as handle:
        handle.write(json.dumps({"schema": wide, "payload": {
            "fee_id": 2, "amount": "BOI=", "units": None, "__op": "c", "__source_ts_ms": 2,
            "__lsn": 2, "__deleted": "false"}}) + "\n")
    with pytest.raises(AddTableError, match="both base64 strings .* and JSON numbers"):
        add_table(tolls, project_dir=project, landing_root=landing, force=True)
    fines = landing / "shop" / "fine"
    fines.mkdir(parents=True)
    deep = dict(schema, fields=[schema["fields"][0], {
        **schema["fields"][1], "parameters": {"scale": "40", "connect.decimal.precision": "50"}}])
    (fines / "LOAD00000001.json").write_text(json.dumps({"schema": deep, "payload": {
        "fee_id": 1, "amount": "AQ==", "__op": "r", "__source_ts_ms": 1, "__lsn": 1,
        "__deleted": "false"}}) + "\n")
    with pytest.raises(AddTableError, match="field amount: a Decimal of scale 40"):
        add_table(fines, project_dir=project, landing_root=landing)


@pytest.mark.parametrize("values,expected", [
    (["1", "-20", None], "bigint"),
    (["1.5", "22.25", "3"], "decimal(18,2)"),
    (["2025-01-01", None], "date"),
    (["2025-01-01 10:00:00.123456", "2025-01-01T10:00:00"], "timestamp"),
    (["true", "False"], "boolean"),
    (["1", "x"], "string"),
    ([None, None], "string"),
])
def test_type_inference(values, expected):
    assert infer_type(values) == expected


def test_help_names_every_option(capsys):
    with pytest.raises(SystemExit):
        cli_main(["add-table", "--help"])
    text = capsys.readouterr().out
    for option in ("--key", "--columns", "--format", "--system", "--landing-root"):
        assert option in text
