"""`lakehouse ci --base main` on the branch CONTRIBUTING.md walks through:
it changes a silver model, adds a table with `lakehouse add-table` and a
column to a mart. Only those and their descendants are built, in a schema of
the branch's own; everything else is read from the base's build (the
session's warehouse, schema t_wh); the tables equal the full build's (plus
the new column, computed here from the base); the schemas are dropped."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest
from lakehouse_cdc import PROJECT_ROOT
from lakehouse_cdc.add_table import add_table
from lakehouse_cdc.slim_ci import SlimCiError, drop_schemas, run_ci
from test_add_table import CDC, LOAD, _truth, _write

PROJECT = "lakehouse_cdc"
NEW_COLUMN = ("row_audit_ts\n    from changes",
              "row_audit_ts,\n        hour(order_ts) as order_hour\n    from changes")
CDC_WRITE_COLUMNS = {"_cdc_loaded_at", "_cdc_run_id"}
#: CONTRIBUTING.md, "add a column to a mart": (file, text, text after it)
MART_CHANGE = [
    ("models/gold/sales/mart_customer_lifetime_value.sql",
     "        cast(avg(order_amount) as decimal(18, 2)) as average_order_value,\n",
     "        cast(max(order_amount) as decimal(18, 2)) as largest_order_value,\n"),
    ("models/gold/sales/_sales__models.yml",
     "      - name: average_order_value\n        description: Mean order amount.\n"
     "        data_type: decimal(18,2)\n",
     "      - name: largest_order_value\n        description: The customer's largest order "
     "amount (cancelled orders excluded).\n        data_type: decimal(18,2)\n"),
    ("models/gold/sales/_sales__unit_tests.yml",
     "average_order_value: 20.00, ", "largest_order_value: 30.00, "),
]


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.com",
                    *args], check=True, capture_output=True)


def _repo(tmp_path, landing_root):
    """The project as a git repository: main = this checkout; the branch changes
    slv_retail__orders, adds the table pos.store and a column to a mart."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("models", "macros", "snapshots", "seeds", "tests/dbt"):
        if (PROJECT_ROOT / name).exists():
            shutil.copytree(PROJECT_ROOT / name, repo / name)
    shutil.copy(PROJECT_ROOT / "dbt_project.yml", repo / "dbt_project.yml")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-qb", "feature/order-hour")
    model = repo / "models" / "silver" / "retail" / "slv_retail__orders.sql"
    text = model.read_text()
    assert NEW_COLUMN[0] in text, "slv_retail__orders.sql changed shape: update NEW_COLUMN"
    model.write_text(text.replace(*NEW_COLUMN))
    _git(repo, "commit", "-qam", "orders: hour of the order")

    landing = tmp_path / "pos_landing"
    _write(landing / "pos" / "store", "LOAD00000001.csv", LOAD)
    _write(landing / "pos" / "store", "20250302-090000500.csv", CDC)
    # outside the build's landing root: the source YAML gets the absolute path
    add_table(landing / "pos" / "store", project_dir=repo, landing_root=landing_root)
    for path, anchor, added in MART_CHANGE:
        text = (repo / path).read_text()
        assert anchor in text, f"{path} changed shape: update MART_CHANGE (and CONTRIBUTING.md)"
        (repo / path).write_text(text.replace(anchor, anchor + added, 1))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "pos.store; largest order per customer")
    return repo


def _rows(spark, table, drop=()):
    frame = spark.table(table)
    frame = frame.drop(*[c for c in frame.columns if c in set(drop) | CDC_WRITE_COLUMNS])
    return Counter(tuple(r) for r in frame.collect())


def test_slim_ci_builds_the_change_and_its_descendants_only(warehouse_run, spark, tmp_path):
    scenario, _ = warehouse_run
    repo = _repo(tmp_path, scenario.landing)
    vars = {"landing_root": str(scenario.landing), **scenario.vars}
    result = run_ci("main", project_dir=repo, prod_schema=scenario.schema,
                    state=scenario.target_path, vars=vars, keep=True)
    schema = result.schema
    assert schema == "ci_feature_order_hour"
    print(f"slim CI built {len(result.built)} nodes in {result.seconds:.0f}s")
    try:
        built = {uid.split(".")[-1] for uid in result.built if uid.startswith("model.")}
        assert built == {"slv_retail__orders", "fct_orders", "fct_order_items",
                         "mart_daily_revenue_by_country", "mart_customer_lifetime_value",
                         "mart_product_performance", "slv_pos__store"}, built
        assert any(uid.startswith("unit_test.") for uid in result.built)
        # nothing else was built: the rest was read from t_wh (deferred)
        for table in ("silver.slv_retail__customer_master", "dimensions.dim_customer",
                      "seeds.order_status"):
            assert not spark.catalog.tableExists(f"{schema}_{table}"), table

        base = f"{scenario.schema}_silver.slv_retail__orders"
        assert _rows(spark, f"{schema}_silver.slv_retail__orders", ["order_hour"]) \
            == _rows(spark, base)
        hours = spark.sql(f"select order_id, order_hour, order_ts "
                          f"from {schema}_silver.slv_retail__orders").collect()
        assert hours and all(r.order_hour == r.order_ts.hour for r in hours)
        for table in ("fct_orders", "fct_order_items", "mart_daily_revenue_by_country",
                      "mart_customer_lifetime_value", "mart_product_performance"):
            ci_rows = _rows(spark, f"{schema}_gold.{table}", ["largest_order_value"])
            assert ci_rows and ci_rows == _rows(spark, f"{scenario.schema}_gold.{table}"), table
        largest: dict = {}
        for row in spark.table(f"{scenario.schema}_gold.fct_orders").collect():
            if not row.is_cancelled:
                largest[row.customer_id] = max(largest.get(row.customer_id, row.order_amount),
                                               row.order_amount)
        got = {r.customer_id: r.largest_order_value for r in spark.table(
            f"{schema}_gold.mart_customer_lifetime_value").collect()}
        assert got == largest
        stores = spark.sql(f"select store_id, store_name, city, opened_on, floor_area, is_open "
                           f"from {schema}_silver.slv_pos__store").collect()
        assert {r.store_id: (r.store_name, r.city, r.opened_on.isoformat(), r.floor_area,
                             r.is_open) for r in stores} == _truth()
        known = spark.sql(f"select count(*) from {schema}_gold.fct_orders "
                          f"where customer_sk != '-1'").first()[0]
        assert known > 0, "facts found no customer version: dim_customer was not deferred"
    finally:
        dropped = drop_schemas(spark, schema)
    assert f"{schema}_gold" in dropped and f"{schema}_silver" in dropped
    for layer in ("bronze", "silver", "gold"):
        assert not spark.catalog.databaseExists(f"{schema}_{layer}")


def test_slim_ci_refuses_a_target_it_cannot_clean_up(monkeypatch):
    """On the cluster target its Spark would drop schemas from this
    process's catalog, not the cluster's: it refuses before anything."""
    monkeypatch.setenv("DBT_TARGET", "cluster")
    with pytest.raises(SlimCiError, match="DBT_TARGET=cluster.*nothing was changed"):
        run_ci("main")
