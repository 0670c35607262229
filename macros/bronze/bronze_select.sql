{#
    SQL reading the change rows of one bronze source table, normalised:

      _cdc_phase            0 for full-load (LOAD*) files, 1 for CDC files
      _cdc_op               I/U/D as written (full-load rows without Op: 'I')
      _cdc_commit_ts        the DMS commit-timestamp column, as written
      _cdc_change_seq       the change-sequence column (AR_H_CHANGE_SEQ), as written
      _cdc_file             full path of the file the row came from
      _cdc_file_modified_at when that file landed (file modification time)
      _cdc_row              1-based data row number within the file
      <source columns>      as written (strings)

    `file_filter` is a SQL predicate over `_metadata` applied on the file scan
    itself, so that Spark lists but does not read files it excludes.
    Row numbers come from monotonically_increasing_id(), which counts rows in
    read order within a task; CSV tables are read with multiLine, so a file is
    never split across tasks. Parquet files larger than
    spark.sql.files.maxPartitionBytes (128 MB) could be split: keep DMS's
    MaxFileSize below it for exact row numbers.
#}
{% macro bronze_select(source_node, file_filter=none) %}
    {%- set cfg = bronze_external_config(source_node) -%}
    {%- set schema = source_node.schema -%}
    {%- set base = source_node.identifier or source_node.name -%}
    {%- set columns = bronze_file_columns(source_node) | map(attribute='name') | list -%}
    {%- set parts = [] -%}
    {%- for phase in [0, 1] -%}
        {%- set table = schema ~ '.' ~ base ~ ('__load' if phase == 0 else '__cdc') -%}
        {%- if phase == 0 and cfg['full_load_op'] == 'absent' -%}
            {%- set op_expr = "'I'" -%}
        {%- elif phase == 0 -%}
            {%- set op_expr = "coalesce(`" ~ cfg['op_column'] ~ "`, 'I')" -%}
        {%- else -%}
            {%- set op_expr = "`" ~ cfg['op_column'] ~ "`" -%}
        {%- endif -%}
        {%- set part -%}
            select
                {{ phase }} as _cdc_phase,
                {{ op_expr }} as _cdc_op,
                `{{ cfg['timestamp_column'] }}` as _cdc_commit_ts,
                `{{ cfg['sequence_column'] }}` as _cdc_change_seq,
                _metadata.file_path as _cdc_file,
                _metadata.file_modification_time as _cdc_file_modified_at,
                monotonically_increasing_id() as _cdc_read_id,
                {%- for column in columns %}
                `{{ column }}`{{ ',' if not loop.last }}
                {%- endfor %}
            from {{ table }}
            {%- if file_filter %}
            where {{ file_filter }}
            {%- endif %}
        {%- endset -%}
        {%- do parts.append(part) -%}
    {%- endfor %}
    select
        _cdc_phase,
        _cdc_op,
        _cdc_commit_ts,
        _cdc_change_seq,
        _cdc_file,
        _cdc_file_modified_at,
        _cdc_read_id - min(_cdc_read_id) over (partition by _cdc_file) + 1 as _cdc_row,
        {%- for column in columns %}
        `{{ column }}`{{ ',' if not loop.last }}
        {%- endfor %}
    from (
        {{ parts | join('\n        union all\n') }}
    ) as bronze_rows
{% endmacro %}
