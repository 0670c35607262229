{#
    The external-table settings of one bronze source table, with defaults.

    Read from the source's `meta.external` (source level), overridden by the
    table's `meta.external`. See models/bronze/dms/_dms__sources.yml and the
    README ("Bronze", "What happens to bad input").

    format            csv | parquet (AWS DMS) or debezium (JSON lines as
                      written by Debezium's ExtractNewRecordState with
                      add.fields=op,source.ts_ms,lsn and
                      delete.tombstone.handling.mode=rewrite; each line
                      bare, or with JsonConverter's schema block)
    header            CSV only: true when the files start with a header row
                      (DMS AddColumnName=true); false (the DMS default) when
                      they do not, and then the fields are, in order: the Op
                      column (CDC files unless cdc_op: absent; full-load
                      files only with full_load_op: included), timestamp_column,
                      sequence_column, then the YAML columns in file order
    full_load_op      DMS: included when full-load files carry Op
                      (IncludeOpForFullLoad=true), else absent
    cdc_op            DMS: included (the default) when CDC files carry
                      Op; absent for CdcInsertsOnly=true with
                      IncludeOpForFullLoad=false (no Op: every row an insert)
    schema_evolution  true: files may lack columns the YAML declares (older
                      files before a column was added; read as NULL); false:
                      such a file's rows are quarantined
    files_removed     fail (the default): a model's run fails when files it
                      read in earlier runs are gone from the location (DMS
                      deletes a table's files on a source TRUNCATE); ignore:
                      files leave on purpose (a lifecycle rule, archiving)
    file_pattern      regex on the file name: what is a data file; any other
                      file under the location (checksums, markers, temporary
                      names) is ignored and counted as ignored
    load_pattern      regex on the file name: full-load files (phase 0):
                      LOAD00000001.csv, and SEGMENT1_LOAD00000001.csv as
                      DMS's parallel full load may name them
    decimal_handling  Debezium, required when a column is declared decimal:
                      the connector's decimal.handling.mode. precise (its
                      default): each value the base64 of the unscaled
                      number, read with the declared column's scale (which
                      must be the source column's); string or double: each
                      value the number as written. The two cannot be told
                      apart from a value ("1234" is both), so a source
                      that does not say fails at compile time.
    The header-column defaults follow the format: Op / dms_commit_ts /
    AR_H_CHANGE_SEQ for DMS, __op / __source_ts_ms / __lsn / __deleted for
    Debezium.
#}
{% macro bronze_external_config(source_node) %}
    {%- set given = {} -%}
    {%- do given.update((source_node.source_meta or {}).get('external', {})) -%}
    {%- do given.update((source_node.meta or {}).get('external', {})) -%}
    {%- set merged = {
        'format': 'csv',
        'location': source_node.source_name ~ '/' ~ source_node.name,
        'header': false,
        'schema_evolution': true,
        'op_column': 'Op',
        'timestamp_column': 'dms_commit_ts',
        'sequence_column': 'AR_H_CHANGE_SEQ',
        'full_load_op': 'included',
        'cdc_op': 'included',
        'files_removed': 'fail',
        'load_pattern': '^(SEGMENT[0-9]+_)?LOAD',
        'null_value': 'NULL',
        'options': {},
    } -%}
    {%- do merged.update({'file_pattern': {'csv': '\\.csv(\\.gz)?$', 'parquet': '\\.parquet$',
                                           'debezium': '\\.json(\\.gz)?$'}.get(given.get('format', 'csv'), '')}) -%}
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
    {%- for flag in ['header', 'schema_evolution'] -%}
        {%- do merged.update({flag: merged[flag] | string | lower in ('true', '1', 'yes')}) -%}
    {%- endfor -%}
    {%- set where = "source " ~ source_node.source_name ~ "." ~ source_node.name ~ ": meta.external." -%}
    {%- set location = merged['location'] -%}
    {%- if not (location.startswith('/') or ':/' in location) -%}
        {%- set root = var('landing_root', env_var('LAKEHOUSE_LANDING', env_var('LAKEHOUSE_HOME', '.lakehouse') ~ '/landing')) -%}
        {%- do merged.update({'location': root ~ '/' ~ location}) -%}
    {%- endif -%}
    {%- if merged['format'] not in ('csv', 'parquet', 'debezium') -%}
        {%- do exceptions.raise_compiler_error(where ~ "format is '" ~ merged['format']
            ~ "'; set it to 'csv', 'parquet' (AWS DMS) or 'debezium'") -%}
    {%- endif -%}
    {%- if merged['format'] == 'debezium' and merged['timestamp_unit'] not in ('micros', 'millis') -%}
        {%- do exceptions.raise_compiler_error(where ~ "timestamp_unit is '" ~ merged['timestamp_unit']
            ~ "'; set it to 'micros' (timestamp(6), MicroTimestamp) or 'millis'") -%}
    {%- endif -%}
    {%- if merged['format'] == 'debezium' -%}
        {%- set decimals = [] -%}
        {%- for column in bronze_file_columns(source_node)
                if decimal_scale(column.data_type) is not none -%}
            {%- do decimals.append(column.name) -%}
        {%- endfor -%}
        {%- if merged.get('decimal_handling') not in ('precise', 'string', 'double')
               and (decimals or 'decimal_handling' in merged) -%}
            {%- do exceptions.raise_compiler_error(where ~ "decimal_handling is "
                ~ ("'" ~ merged['decimal_handling'] ~ "'" if 'decimal_handling' in merged
                   else "not set, and column(s) " ~ decimals | join(', ') ~ " are declared decimal")
                ~ "; set it to the connector's decimal.handling.mode: 'precise' (Debezium's default: "
                ~ "each value the base64 of the unscaled number, read with the declared scale, which "
                ~ "must be the source column's), 'string' or 'double' (each value the number as "
                ~ "written). A value such as \"1234\" reads as either, so the project does not guess.") -%}
        {%- endif -%}
    {%- endif -%}
    {%- if merged['full_load_op'] not in ('included', 'absent') -%}
        {%- do exceptions.raise_compiler_error(where ~ "full_load_op is '" ~ merged['full_load_op']
            ~ "'; set it to 'included' (IncludeOpForFullLoad=true) or 'absent'") -%}
    {%- endif -%}
    {%- if merged['cdc_op'] not in ('included', 'absent') -%}
        {%- do exceptions.raise_compiler_error(where ~ "cdc_op is '" ~ merged['cdc_op']
            ~ "'; set it to 'included' (DMS's default) or 'absent' (CdcInsertsOnly=true with "
            ~ "IncludeOpForFullLoad=false: CDC files without Op, every row an insert)") -%}
    {%- endif -%}
    {%- if merged['files_removed'] not in ('fail', 'ignore') -%}
        {%- do exceptions.raise_compiler_error(where ~ "files_removed is '" ~ merged['files_removed']
            ~ "'; set it to 'fail' (the default: a run fails when files it read are gone, as after a DMS "
            ~ "truncate) or 'ignore' (files leave on purpose)") -%}
    {%- endif -%}
    {%- if not merged['file_pattern'] -%}
        {%- do exceptions.raise_compiler_error(where ~ "file_pattern is empty; set a regex on file names, "
            ~ "e.g. '\\.csv$'") -%}
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

{#
    The header columns DMS (or Debezium) writes before the table's columns,
    in file order, for a full-load (phase 0) or CDC (phase 1) file; with
    phase none, every one a file may have (operation, commit time, change
    sequence, in that order: readers find them by position in this list).
#}
{% macro bronze_header_columns(cfg, phase=none) %}
    {%- set columns = [] -%}
    {%- if cfg['format'] == 'debezium' or phase is none
           or cfg['full_load_op' if phase == 0 else 'cdc_op'] == 'included' -%}
        {%- do columns.append(cfg['op_column']) -%}
    {%- endif -%}
    {%- do columns.extend([cfg['timestamp_column'], cfg['sequence_column']]) -%}
    {%- if cfg['format'] == 'debezium' -%}
        {%- do columns.append(cfg['deleted_column']) -%}
    {%- endif -%}
    {{ return(columns) }}
{% endmacro %}
