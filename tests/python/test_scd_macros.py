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


def test_generic_tests_pass_good_and_catch_broken_fixtures(spark, schema, fixture_project,
                                                           tmp_path):
    """The SCD2 tests on a correct and a broken dimension; primary_key on
    those and on keys with repeats and nulls (one failing row per key value:
    the fixtures' comments list them)."""
    project = fixture_project("scd")
    models = ["good_dim", "broken_dim", "keys_cases"]
    run_dbt(["run", "--select", *models], project_dir=project, schema=schema,
            target_path=tmp_path / "target")
    result = run_dbt(["test", "--select", *models], project_dir=project,
                     schema=schema, target_path=tmp_path / "target", expect_success=False)
    outcome = {}
    for node in result.result.results:
        metadata = node.node.test_metadata
        model = next(m for m in models if m in node.node.unique_id).removesuffix("_dim")
        key = metadata.name
        if key == "primary_key":
            columns = metadata.kwargs.get("columns") or [metadata.kwargs["column_name"]]
            key += ":" + ",".join(columns)
        outcome[(model, key)] = (str(node.status), node.failures)
    assert outcome == {
        ("good", "scd2_no_overlap"): ("pass", 0),
        ("good", "scd2_no_gap"): ("pass", 0),
        ("good", "scd2_one_current"): ("pass", 0),
        ("good", "scd2_positive_interval"): ("pass", 0),
        ("good", "primary_key:entity_id,rec_eff_dt"): ("pass", 0),
        ("broken", "scd2_no_overlap"): ("fail", 2),  # entity 1, entity 3
        ("broken", "scd2_no_gap"): ("fail", 1),  # entity 2
        ("broken", "scd2_one_current"): ("fail", 1),  # entity 3
        ("broken", "scd2_positive_interval"): ("fail", 1),  # entity 4
        ("broken", "primary_key:entity_id,rec_eff_dt"): ("fail", 2),  # entities 3 and 4
        ("keys_cases", "primary_key:key_id"): ("fail", 2),  # 2 repeated, null
        ("keys_cases", "primary_key:key_id,part"): ("fail", 3),  # (2, a) repeated, two nulls
    }
