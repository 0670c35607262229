"""Great Expectations suites on the silver and gold tables: they pass on the
pipeline's output, write JSON and HTML Data Docs, and a violated expectation
fails its suite with a summary saying what failed."""

from __future__ import annotations

import json

from lakehouse_cdc.quality import load_suites, run_suites


def test_suites_pass_on_pipeline_output_and_write_data_docs(warehouse_run, spark, tmp_path):
    scenario, _ = warehouse_run
    suites = load_suites()
    report = run_suites(spark, suites, scenario.schema, tmp_path / "quality")
    assert report.passed, report.summary()
    assert {s.name for s in report.suites} == set(suites)
    for suite in suites:
        result = json.loads((report.results_dir / f"{suite}.json").read_text())
        assert result["success"] is True
        assert result["statistics"]["evaluated_expectations"] == len(suites[suite]["expectations"])
    assert report.data_docs is not None and report.data_docs.exists()
    assert "slv_retail__orders" in report.data_docs.read_text()


def test_violated_expectation_fails_its_suite(warehouse_run, spark, tmp_path):
    scenario, _ = warehouse_run
    broken = f"{scenario.schema}_silver.broken_orders"
    spark.sql(f"drop table if exists {broken}")
    spark.sql(f"create table {broken} using iceberg as "
              f"select * from {scenario.schema}_silver.slv_retail__orders "
              f"union all select * from {scenario.schema}_silver.slv_retail__orders limit 5")
    spark.sql(f"insert into {broken} select * from {broken} limit 1")  # a duplicate key
    suites = {"broken_orders": {**load_suites()["slv_retail__orders"],
                                "table": "{schema}_silver.broken_orders"}}
    report = run_suites(spark, suites, scenario.schema, tmp_path / "quality", data_docs=False)
    assert not report.passed
    (suite,) = report.suites
    assert suite.success_percent < 100
    assert len(suite.failures) == 1 and "expect_column_values_to_be_unique" in suite.failures[0]
    assert "FAILED" in report.summary()
    # a lower threshold lets the same data pass
    suites["broken_orders"]["min_success_percent"] = 60
    relaxed = run_suites(spark, suites, scenario.schema, tmp_path / "relaxed", data_docs=False)
    assert relaxed.passed
