"""`lakehouse ci --base main`: a branch that changes one silver model builds
only it and its descendants in a schema of its own, reads everything else
from the base's build (the session's warehouse, schema t_wh), and its tables
equal the full build's; the schemas are dropped afterwards."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

from lakehouse_cdc import PROJECT_ROOT
from lakehouse_cdc.slim_ci import drop_schemas, run_ci

PROJECT = "lakehouse_cdc"
NEW_COLUMN = ("row_audit_ts\n    from changes",
              "row_audit_ts,\n        hour(order_ts) as order_hour\n    from changes")
CDC_WRITE_COLUMNS = {"_cdc_loaded_at", "_cdc_run_id"}


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=ci", "-c", "user.email=ci@example.com",
                    *args], check=True, capture_output=True)


def _repo(tmp_path):
    """The project as a git repository: main = this checkout, branch = one change."""
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
    return repo


def _rows(spark, table, drop=()):
    frame = spark.table(table)
    frame = frame.drop(*[c for c in frame.columns if c in set(drop) | CDC_WRITE_COLUMNS])
    return Counter(tuple(r) for r in frame.collect())


def test_slim_ci_builds_the_change_and_its_descendants_only(warehouse_run, spark, tmp_path):
    scenario, _ = warehouse_run
    repo = _repo(tmp_path)
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
                         "mart_product_performance"}, built
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
            ci_rows = _rows(spark, f"{schema}_gold.{table}")
            assert ci_rows and ci_rows == _rows(spark, f"{scenario.schema}_gold.{table}"), table
        known = spark.sql(f"select count(*) from {schema}_gold.fct_orders "
                          f"where customer_sk != '-1'").first()[0]
        assert known > 0, "facts found no customer version: dim_customer was not deferred"
    finally:
        dropped = drop_schemas(spark, schema)
    assert f"{schema}_gold" in dropped and f"{schema}_silver" in dropped
    for layer in ("bronze", "silver", "gold"):
        assert not spark.catalog.databaseExists(f"{schema}_{layer}")
