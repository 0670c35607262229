{#
    The bookkeeping tables shared by all CDC models of a schema:
      cdc_file_log    which bronze files each model has applied
      cdc_run_audit   one row per model run: rows read, applied, superseded,
                      quarantined, and the Iceberg snapshot written
      cdc_quarantine  rows that could not be applied, with file, row and reason
#}
{% macro _cdc_ensure_log_tables(schema) %}
    {%- do run_query('create database if not exists ' ~ schema) -%}
    {%- do run_query('create table if not exists ' ~ schema ~ '.cdc_file_log (
            model_name string, file_path string, file_modified_at timestamp, row_count bigint,
            applied_at timestamp, run_id string) using iceberg') -%}
    {%- do run_query('create table if not exists ' ~ schema ~ '.cdc_run_audit (
            model_name string, run_id string, run_started_at timestamp, finished_at timestamp,
            is_initial boolean, files_read bigint, rows_read bigint, rows_applied bigint,
            rows_superseded bigint, rows_quarantined bigint, snapshot_id bigint) using iceberg') -%}
    {%- do run_query('create table if not exists ' ~ schema ~ '.cdc_quarantine (
            model_name string, run_id string, file_path string, row_number bigint, reason string,
            record string, quarantined_at timestamp) using iceberg') -%}
{% endmacro %}
