"""The shared hash macro and the generic SCD2 tests, on fixtures."""

from __future__ import annotations

import hashlib

from lakehouse_cdc.dbt_runner import run_dbt


def _expected_hash(*values: str | None) -> str:
    """The encoding hash_columns promises, restated in Python."""
    parts = ["\\N" if v is None else v.replace("\\", "\\\\").replace("|", "\\|") for v in values]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def test_hash_columns_separates_null_empty_and_separator(spark, schema, fixture_project,
                                                          tmp_path):
    project = fixture_project("scd")
    run_dbt(["run", "--select", "hash_cases"], project_dir=project, schema=schema,
            target_path=tmp_path / "target")
    rows = spark.sql(f"select * from {schema}.hash_cases order by case_id").collect()
    assert len(rows) == 8
    for row in rows:
        assert row.hashed == _expected_hash(row.first_value, row.second_value), row
    assert len({row.hashed for row in rows}) == len(rows), "two different tuples collide"


def test_scd2_generic_tests_pass_a_good_and_catch_a_broken_dimension(spark, schema,
                                                                     fixture_project, tmp_path):
    project = fixture_project("scd")
    run_dbt(["run", "--select", "good_dim", "broken_dim"], project_dir=project, schema=schema,
            target_path=tmp_path / "target")
    result = run_dbt(["test", "--select", "good_dim", "broken_dim"], project_dir=project,
                     schema=schema, target_path=tmp_path / "target", expect_success=False)
    outcome = {}
    for node in result.result.results:
        test_name = node.node.test_metadata.name
        model = "broken" if "broken_dim" in node.node.unique_id else "good"
        outcome[(model, test_name)] = (str(node.status), node.failures)
    assert outcome == {
        ("good", "scd2_no_overlap"): ("pass", 0),
        ("good", "scd2_no_gap"): ("pass", 0),
        ("good", "scd2_one_current"): ("pass", 0),
        ("good", "scd2_positive_interval"): ("pass", 0),
        ("broken", "scd2_no_overlap"): ("fail", 2),  # entity 1, entity 3
        ("broken", "scd2_no_gap"): ("fail", 1),  # entity 2
        ("broken", "scd2_one_current"): ("fail", 1),  # entity 3
        ("broken", "scd2_positive_interval"): ("fail", 1),  # entity 4
    }
