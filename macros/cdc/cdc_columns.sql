{#
    The `_cdc_*` bookkeeping columns, defined here once.

    cdc_column_names(kind) lists them by kind:
      'provenance'  passed from cdc_changes() to the table: the load phase,
                    operation, commit time and change sequence, and where
                    the change came from (file, landing time, row)
      'transient'   passed from cdc_changes() to cdc_apply, never stored as
                    such: the file's row count and hold reason (row
                    conservation), the columns whose value the source did
                    not send (Debezium TOAST), the values of columns the
                    YAML does not declare, the reject reason and the row as
                    written (quarantine)
      'generated'   written by cdc_apply itself: when and by which run a row
                    was loaded, and the soft-delete flag and time
    cdc_columns() is the select list a silver model passes through:
    provenance, then transient (`kinds`: a change-log view selects the
    provenance only).
#}
{% macro cdc_column_names(kind) -%}
    {%- set names = {
        'provenance': ['_cdc_phase', '_cdc_op', '_cdc_commit_ts', '_cdc_change_seq', '_cdc_file',
                       '_cdc_file_modified_at', '_cdc_row'],
        'transient': ['_cdc_file_rows', '_cdc_file_held', '_cdc_unavailable', '_cdc_extra',
                      '_cdc_reject_reason', '_cdc_raw'],
        'generated': ['_cdc_loaded_at', '_cdc_run_id', 'is_deleted', 'deleted_at'],
    } -%}
    {%- if kind not in names -%}
        {%- do exceptions.raise_compiler_error("cdc_column_names: unknown kind '" ~ kind ~ "' (one of "
                                               ~ names.keys() | join(', ') ~ ")") -%}
    {%- endif -%}
    {{ return(names[kind]) }}
{%- endmacro %}

{% macro cdc_columns(alias=none, kinds=['provenance', 'transient']) -%}
    {%- set prefix = alias ~ '.' if alias else '' -%}
    {%- set names = [] -%}
    {%- for kind in kinds -%}{%- do names.extend(cdc_column_names(kind)) -%}{%- endfor -%}
    {%- for column in names -%}
        {{ prefix }}{{ column }}{{ ',\n        ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}
