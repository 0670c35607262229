"""The dbt unit tests (models/**/_*unit_tests*.yml, `unit_tests:` blocks) can
fail: each model's SQL is broken on purpose in a copy of the project, the way
a hurried edit might break it, and every unit test must then fail. (Unbroken,
they pass: they run inside the first `dbt build` of the session's warehouse.)
A unit test's pass is reused until its SQL or expected rows change
(`materialization_unit.sql`): checked on a fresh schema."""

from __future__ import annotations

import re

from lakehouse_cdc.dbt_runner import run_dbt

#: model file -> (text in it, the slip that replaces it)
SLIPS = {
    "gold/sales/fct_orders.sql": ("and orders.order_ts < customers.rec_exp_dt",
                                  "and orders.order_ts <= customers.rec_exp_dt"),
    "gold/sales/fct_order_items.sql": ("and orders.order_ts < products.rec_exp_dt",
                                       "and orders.order_ts <= products.rec_exp_dt"),
    "gold/sales/mart_customer_lifetime_value.sql": (
        "not is_cancelled and customer_id is not null", "customer_id is not null"),
    "gold/sales/mart_daily_revenue_by_country.sql": ("where not orders.is_cancelled", "where true"),
    "gold/sales/mart_product_performance.sql": (
        "count(distinct order_id)", "count(order_id)"),
    "silver/retail/slv_retail__customer_master.sql": ("'@', -1)", "'@', 1)"),
    "silver/retail/slv_retail__customer_address.sql": ("trim(country) as country", "country"),
    "silver/retail/slv_retail__product.sql": ("trim(category) as category", "category"),
    "silver/retail/slv_retail__orders.sql": ("upper(trim(status))", "trim(status)"),
    "silver/retail/slv_retail__order_items.sql": ("cast(quantity * unit_price", "cast(unit_price"),
    "silver/intermediate/int_customer__current.sql": (
        "case when not master.is_deleted and not address.is_deleted then address.city end",
        "case when not master.is_deleted then address.city end"),
    "silver/intermediate/int_product__current.sql": (
        "case when not is_deleted then product_name end", "product_name"),
}


def test_every_unit_test_fails_when_its_model_is_broken(warehouse_run, project_copy, tmp_path):
    scenario, _ = warehouse_run
    project = project_copy()
    for path, (right, wrong) in SLIPS.items():
        model = project / "models" / path
        text = model.read_text()
        assert right in text, f"{path} no longer has {right!r}: update SLIPS"
        model.write_text(text.replace(right, wrong))
    result = run_dbt(["test", "--select", "test_type:unit"], project_dir=project,
                     schema=scenario.schema,
                     vars={"landing_root": str(scenario.landing), "build_snapshots": True},
                     target_path=tmp_path / "target", expect_success=False)
    units = [r for r in result.result.results if r.node.resource_type == "unit_test"]
    outcomes = {r.node.name: str(r.status) for r in units}
    broken = {path.rsplit("/", 1)[1].removesuffix(".sql") for path in SLIPS}
    assert {r.node.tested_node_unique_id.split(".")[-1] for r in units} == broken
    assert set(outcomes.values()) == {"fail"}, outcomes


def test_silver_unit_tests_alone_on_a_fresh_schema_then_reused_until_they_change(
        spark, simulated, schema, project_copy, tmp_path):
    """`dbt test --select test_type:unit` on a schema where nothing was built
    yet: the hook stages the bronze views the silver unit tests take their
    input columns from, and they pass (nothing else is built). Run again,
    each reuses its pass: dbt's query comparing actual and expected rows is
    not sent. A unit test whose model or expected rows changed runs again
    (and fails, here), the others keep reusing; put back, it reuses the pass
    it had. One with `reuse_test_passes: false` in its overrides runs every
    time; the var set for the run runs them all."""
    import yaml
    from cdc_helpers import Scenario

    sim = simulated(seed=4, scale=5, batches=1, add_column_at_batch=0)
    scenario = Scenario(sim, tmp_path / "landing", schema)
    scenario.land(0)
    project = project_copy()
    tests_yml = project / "models/silver/retail/_retail__unit_tests.yml"
    declared = yaml.safe_load(tests_yml.read_text())["unit_tests"]
    runs = iter(range(100))

    def run(**extra_vars) -> tuple[dict[str, str], set[str], int]:
        """Each silver unit test's outcome; those reused (the log says so);
        how many comparison queries dbt sent to Spark (dbt.log)."""
        logs = tmp_path / f"run{next(runs)}"
        result = run_dbt(["test", "--select", "test_type:unit,path:models/silver/retail",
                          "--log-path", str(logs)], project_dir=project, schema=schema,
                         vars={"landing_root": str(scenario.landing), **extra_vars},
                         target_path=tmp_path / "target", expect_success=False)
        outcomes = {r.node.name: str(r.status) for r in result.result.results
                    if r.node.resource_type == "unit_test"}
        log = (logs / "dbt.log").read_text()
        return (outcomes, set(re.findall(r"(\w+): pass reused", log)),
                log.count("-- Build actual result given inputs"))

    passing = {test["name"]: "pass" for test in declared}
    assert run() == (passing, set(), len(declared))
    assert not spark.catalog.databaseExists(f"{schema}_silver")
    stored = spark.sql(f"select test_id from {schema}_ops.test_passes").collect()
    assert sorted(r.test_id.rsplit(".", 1)[1] for r in stored) == sorted(passing)
    assert run() == (passing, set(passing), 0)  # nothing changed: every pass reused

    # a slip in one model: its test runs (and fails), the others are reused
    model = project / "models/silver/retail/slv_retail__product.sql"
    right, wrong = SLIPS["silver/retail/slv_retail__product.sql"]
    text = model.read_text()
    model.write_text(text.replace(right, wrong))
    [product_test] = [name for name in passing if name.startswith("slv_retail__product_")]
    others = set(passing) - {product_test}
    assert run() == ({**passing, product_test: "fail"}, others, 1)
    model.write_text(text)
    assert run() == (passing, set(passing), 0)  # as when it passed: reused

    # an expected row fewer: that test runs again (and fails, here); a test
    # switched off by its own `overrides: {vars: ...}` runs every time
    changed = yaml.safe_load(tests_yml.read_text())
    target, switched = changed["unit_tests"][:2]
    target["expect"]["rows"].pop(0)
    switched.setdefault("overrides", {}).setdefault("vars", {})["reuse_test_passes"] = False
    tests_yml.write_text(yaml.safe_dump(changed, sort_keys=False))
    failing = {**passing, target["name"]: "fail"}
    for _ in range(2):
        assert run() == (failing, set(passing) - {target["name"], switched["name"]}, 2)

    assert run(reuse_test_passes=False) == (failing, set(), len(declared))
