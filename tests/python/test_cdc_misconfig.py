"""A misconfigured CDC model fails at compile time, naming the model and the
setting to change."""

from __future__ import annotations

import pytest
from lakehouse_cdc.dbt_runner import DbtError, run_dbt


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("no_unique_key", ["model 'no_unique_key'", "needs unique_key", "config()"]),
        ("unknown_sequence", ["model 'unknown_sequence'", "cdc_sequence_by", "'commit_lsn'"]),
        ("unknown_write_mode", ["model 'unknown_write_mode'", "cdc_write_mode is 'upsert'",
                                "'merge-on-read' or 'copy-on-write'"]),
        ("not_iceberg", ["model 'not_iceberg'", "file_format is 'parquet'",
                         "file_format='iceberg'"]),
        # a change-log view over a model that does not keep its changes
        ("log_without_kept_changes", ["model 'log_without_kept_changes'", "does not keep them",
                                      "'cdc_keep_changes': true", "config() of thing_state"]),
    ],
)
def test_misconfigured_model_fails_at_compile(spark, schema, fixture_project, tmp_path, model,
                                              expected):
    project = fixture_project("misconfig")
    with pytest.raises(DbtError) as failure:
        run_dbt(["compile", "--select", model], project_dir=project, schema=schema,
                target_path=tmp_path / "target")
    message = str(failure.value)
    for fragment in expected:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    # nothing was built: compile never touches the warehouse
    assert not spark.catalog.tableExists(f"{schema}.{model}")
