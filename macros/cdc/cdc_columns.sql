{#
    The bookkeeping columns every CDC silver model passes through from
    cdc_changes(): sequence, operation, provenance (file, row, landing time),
    the file's row count and hold reason (row conservation), the columns
    whose value the source did not send (Debezium TOAST), the values of
    columns the YAML does not declare, and the reject reason / raw row used
    for quarantine. The last six never reach the table as such.
#}
{% macro cdc_columns(alias=none) -%}
    {%- set prefix = alias ~ '.' if alias else '' -%}
    {%- for column in ['_cdc_phase', '_cdc_op', '_cdc_commit_ts', '_cdc_change_seq', '_cdc_file',
                       '_cdc_file_modified_at', '_cdc_row', '_cdc_file_rows', '_cdc_file_held',
                       '_cdc_unavailable', '_cdc_extra', '_cdc_reject_reason', '_cdc_raw'] -%}
        {{ prefix }}{{ column }}{{ ',\n        ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}
