{#
    The external-table settings of one bronze source table, with defaults.

    Read from the source's `meta.external` (source level), overridden by the
    table's `meta.external`. See models/bronze/dms/_dms__sources.yml.

    format: csv | parquet (AWS DMS) or debezium (JSON lines as written by
    Debezium's ExtractNewRecordState with add.fields=op,source.ts_ms,lsn and
    delete.tombstone.handling.mode=rewrite). The header-column defaults
    follow the format: Op / dms_commit_ts / AR_H_CHANGE_SEQ for DMS,
    __op / __source_ts_ms / __lsn / __deleted for Debezium.
#}
{% macro bronze_external_config(source_node) %}
    {%- set given = {} -%}
    {%- do given.update((source_node.source_meta or {}).get('external', {})) -%}
    {%- do given.update((source_node.meta or {}).get('external', {})) -%}
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
    {%- if given.get('format') == 'debezium' -%}
        {%- do merged.update({
            'op_column': '__op',
            'timestamp_column': '__source_ts_ms',
            'sequence_column': '__lsn',
            'deleted_column': '__deleted',
            'timestamp_unit': 'micros',
        }) -%}
    {%- endif -%}
    {%- do merged.update(given) -%}
    {%- set location = merged['location'] -%}
    {%- if not (location.startswith('/') or ':/' in location) -%}
        {%- set root = var('landing_root', env_var('LAKEHOUSE_LANDING', env_var('LAKEHOUSE_HOME', '.lakehouse') ~ '/landing')) -%}
        {%- do merged.update({'location': root ~ '/' ~ location}) -%}
    {%- endif -%}
    {%- if merged['format'] not in ('csv', 'parquet', 'debezium') -%}
        {%- do exceptions.raise_compiler_error(
            "source " ~ source_node.source_name ~ "." ~ source_node.name ~ ": meta.external.format is '"
            ~ merged['format'] ~ "'; set it to 'csv', 'parquet' (AWS DMS) or 'debezium'") -%}
    {%- endif -%}
    {%- if merged['format'] == 'debezium' and merged['timestamp_unit'] not in ('micros', 'millis') -%}
        {%- do exceptions.raise_compiler_error(
            "source " ~ source_node.source_name ~ "." ~ source_node.name ~ ": meta.external.timestamp_unit is '"
            ~ merged['timestamp_unit'] ~ "'; set it to 'micros' (timestamp(6), MicroTimestamp) or 'millis'") -%}
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
