{#
    SQL reading the change rows of one bronze source table, normalised:

      _cdc_phase            0 for full-load (LOAD*) files, 1 for CDC files
      _cdc_op               I/U/D as written (full-load rows without Op: 'I';
                            Debezium c/r -> I, u -> U, d or __deleted -> D)
      _cdc_commit_ts        the DMS commit-timestamp column, as written
                            (Debezium: source.ts_ms as yyyy-MM-dd HH:mm:ss.SSSSSS)
      _cdc_change_seq       the change-sequence column (AR_H_CHANGE_SEQ; Debezium: the LSN)
      _cdc_file             full path of the file the row came from
      _cdc_file_modified_at when that file landed (file modification time)
      _cdc_row              1-based data row number within the file
      <source columns>      as written (strings; Debezium's epoch numbers of
                            timestamp and date columns as DMS-style text)

    `file_filter` is a SQL predicate over `_metadata` applied on the file scan
    itself, so that Spark lists but does not read files it excludes.
    Row numbers come from monotonically_increasing_id(), which counts rows in
    read order within a task; CSV tables are read with multiLine, so a file is
    never split across tasks. Parquet and JSON-lines files larger than
    spark.sql.files.maxPartitionBytes (128 MB) could be split: keep DMS's
    MaxFileSize below it for exact row numbers.
#}
{% macro bronze_select(source_node, file_filter=none) %}
    {%- set cfg = bronze_external_config(source_node) -%}
    {%- set schema = source_node.schema -%}
    {%- set base = source_node.identifier or source_node.name -%}
    {%- set columns = bronze_file_columns(source_node) -%}
    {%- set parts = [] -%}
    {%- for phase in [0, 1] -%}
        {%- set table = schema ~ '.' ~ base ~ ('__load' if phase == 0 else '__cdc') -%}
        {%- set commit_expr = "`" ~ cfg['timestamp_column'] ~ "`" -%}
        {%- if cfg['format'] == 'debezium' -%}
            {#- c (create) and r (snapshot read) insert; __deleted marks a
                rewritten delete; anything else stays as written and is
                quarantined as an unknown operation -#}
            {%- set op = "`" ~ cfg['op_column'] ~ "`" -%}
            {%- set op_expr -%}
                case
                    when `{{ cfg['deleted_column'] }}` = 'true' then 'D'
                    when {{ op }} in ('c', 'r') then 'I'
                    when {{ op }} = 'u' then 'U'
                    when {{ op }} = 'd' then 'D'
                    else {{ op }}
                end
            {%- endset -%}
            {%- set commit_expr = _bronze_epoch_text(commit_expr, 'millis') -%}
        {%- elif phase == 0 and cfg['full_load_op'] == 'absent' -%}
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
                {{ commit_expr }} as _cdc_commit_ts,
                `{{ cfg['sequence_column'] }}` as _cdc_change_seq,
                _metadata.file_path as _cdc_file,
                _metadata.file_modification_time as _cdc_file_modified_at,
                monotonically_increasing_id() as _cdc_read_id,
                {%- for column in columns %}
                {{ _bronze_value_text(cfg, column) }} as `{{ column.name }}`{{ ',' if not loop.last }}
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
        `{{ column.name }}`{{ ',' if not loop.last }}
        {%- endfor %}
    from (
        {{ parts | join('\n        union all\n') }}
    ) as bronze_rows
{% endmacro %}

{#- A column's value as text in the DMS form. Debezium writes timestamps as
    numbers since the epoch (timestamp(6): microseconds, or meta.external
    timestamp_unit) and dates as days since the epoch; a value that is not a
    number stays as written, so silver quarantines it rather than losing it. -#}
{% macro _bronze_value_text(cfg, column) %}
    {%- set name = "`" ~ column.name ~ "`" -%}
    {%- set data_type = (column.data_type or 'string') | lower -%}
    {%- if cfg['format'] == 'debezium' and data_type == 'timestamp' -%}
        {{ _bronze_epoch_text(name, cfg['timestamp_unit']) }}
    {%- elif cfg['format'] == 'debezium' and data_type == 'date' -%}
        case when {{ name }} rlike '^-?[0-9]+$'
            then cast(date_add(date '1970-01-01', cast({{ name }} as int)) as string)
            else {{ name }} end
    {%- else -%}
        {{ name }}
    {%- endif -%}
{% endmacro %}

{% macro _bronze_epoch_text(expr, unit) %}
    case when {{ expr }} rlike '^-?[0-9]+$'
        then date_format(timestamp_{{ unit }}(cast({{ expr }} as bigint)), 'yyyy-MM-dd HH:mm:ss.SSSSSS')
        else {{ expr }} end
{%- endmacro %}
