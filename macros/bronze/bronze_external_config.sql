{#
    The external-table settings of one bronze source table, with defaults.

    Read from the source's `meta.external` (source level), overridden by the
    table's `meta.external`. See models/bronze/dms/_dms__sources.yml.
#}
{% macro bronze_external_config(source_node) %}
    {%- set merged = {
        'format': 'csv',
        'location': source_node.source_name ~ '/' ~ source_node.name,
        'op_column': 'Op',
        'timestamp_column': 'dms_commit_ts',
        'sequence_column': 'AR_H_CHANGE_SEQ',
        'full_load_op': 'included',
        'load_glob': 'LOAD*',
        'cdc_glob': '[0-9]*',
        'null_value': 'NULL',
        'options': {},
    } -%}
    {%- do merged.update((source_node.source_meta or {}).get('external', {})) -%}
    {%- do merged.update((source_node.meta or {}).get('external', {})) -%}
    {%- set location = merged['location'] -%}
    {%- if not (location.startswith('/') or ':/' in location) -%}
        {%- set root = var('landing_root', env_var('LAKEHOUSE_LANDING', env_var('LAKEHOUSE_HOME', '.lakehouse') ~ '/landing')) -%}
        {%- do merged.update({'location': root ~ '/' ~ location}) -%}
    {%- endif -%}
    {%- if merged['format'] not in ('csv', 'parquet') -%}
        {%- do exceptions.raise_compiler_error(
            "source " ~ source_node.source_name ~ "." ~ source_node.name ~ ": meta.external.format is '"
            ~ merged['format'] ~ "'; set it to 'csv' or 'parquet'") -%}
    {%- endif -%}
    {%- if merged['full_load_op'] not in ('included', 'absent') -%}
        {%- do exceptions.raise_compiler_error(
            "source " ~ source_node.source_name ~ "." ~ source_node.name ~ ": meta.external.full_load_op is '"
            ~ merged['full_load_op'] ~ "'; set it to 'included' (IncludeOpForFullLoad=true) or 'absent'") -%}
    {%- endif -%}
    {%- if not bronze_file_columns(source_node) -%}
        {%- do exceptions.raise_compiler_error(
            "source " ~ source_node.source_name ~ "." ~ source_node.name
            ~ ": declare its columns (in file order, with data_type) in the source YAML") -%}
    {%- endif -%}
    {{ return(merged) }}
{% endmacro %}

{#
    The columns of a bronze source table that are in its files: the YAML's
    columns without the `_cdc_*` ones, which bronze_select() adds and the YAML
    only documents.
#}
{% macro bronze_file_columns(source_node) %}
    {%- set columns = [] -%}
    {%- for column in source_node.columns.values() if not column.name.startswith('_cdc_') -%}
        {%- do columns.append(column) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
