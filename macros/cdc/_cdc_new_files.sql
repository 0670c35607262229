{#
    Step 1 of a CDC run: find the files to read. Lists every file under the
    source's location (no content is read) and keeps those this model has
    not logged yet, by path and modification time, so a file that lands late
    with an old modification time (a copy or a restore) is found like any
    other. The list is frozen for the run in a cached table
    `<model>__cdc_files` (data files: is_data; others are logged as ignored
    by cdc_apply), so what is logged is exactly what was listed.

    Returns the data files' paths, for bronze_select(). Commands that only
    compile (compile, docs, lint templaters) list nothing: the SQL they show
    reads no file.
#}
{% macro _cdc_new_files(node, incremental) %}
    {%- if flags.WHICH not in ('run', 'build') -%}{{ return([]) }}{%- endif -%}
    {%- set cfg = bronze_external_config(node) -%}
    {%- set listing = node.schema ~ '.' ~ (node.identifier or node.name) ~ '__files' -%}
    {%- if run_query("show tables in " ~ node.schema ~ " like " ~ sql_string((node.identifier or node.name) ~ '__files')).rows | length == 0 -%}
        {%- do exceptions.raise_compiler_error(
            "model '" ~ model.name ~ "': the file listing " ~ listing ~ " of source " ~ node.source_name ~ "."
            ~ node.name ~ " does not exist. Bronze tables are staged by the on-run-start hook; run "
            ~ "`dbt run-operation stage_bronze_sources` if hooks were skipped.") -%}
    {%- endif -%}
    {%- set log_relation = adapter.get_relation(database=none, schema=this.schema, identifier='cdc_file_log') -%}
    {%- set files = this.identifier ~ '__cdc_files' -%}
    {#- dropping a temporary view uncaches it too -#}
    {%- do run_query('drop view if exists ' ~ files) -%}
    {%- set query -%}
        cache table {{ files }} as
        select
            f.file_path,
            f.file_modified_at,
            f.file_size,
            f.file_name rlike {{ sql_string(cfg['file_pattern']) }} as is_data
        from (
            select
                _metadata.file_path as file_path,
                _metadata.file_name as file_name,
                _metadata.file_modification_time as file_modified_at,
                _metadata.file_size as file_size
            from {{ listing }}
        ) as f
        {%- if incremental and log_relation is not none %}
        left anti join (
            select file_path, file_modified_at
            from {{ log_relation }}
            where model_name = {{ sql_string(model.name) }}
        ) as logged
            on f.file_path = logged.file_path and f.file_modified_at = logged.file_modified_at
        {%- endif %}
    {%- endset -%}
    {%- do run_query(query) -%}
    {%- set paths = run_query('select file_path from ' ~ files ~ ' where is_data').columns[0].values() | list -%}
    {%- do _cdc_count_skipped_events(node, cfg, paths) -%}
    {{ return(paths) }}
{% endmacro %}

{#
    Debezium files may hold schema-change events (a `ddl` or `tableChanges`
    field): not changes, skipped by bronze, but counted per file here, in
    the cached `<model>__cdc_events`, for the file log (cdc_apply). Only
    the new files' lines are read.
#}
{% macro _cdc_count_skipped_events(node, cfg, paths) %}
    {%- set events = this.identifier ~ '__cdc_events' -%}
    {%- do run_query('drop view if exists ' ~ events) -%}
    {%- if cfg['format'] != 'debezium' or paths | length == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set literals = [] -%}
    {%- for path in paths -%}{%- do literals.append(sql_string(path)) -%}{%- endfor -%}
    {%- set query -%}
        cache table {{ events }} as
        select file_path, count(*) as events_skipped
        from (
            select _metadata.file_path as file_path, from_json(trim(value), 'map<string, string>') as fields
            from {{ node.schema ~ '.' ~ (node.identifier or node.name) ~ '__lines' }}
            where _metadata.file_path in ({{ literals | join(', ') }})
        ) as lines
        where coalesce(map_contains_key(fields, 'ddl') or map_contains_key(fields, 'tableChanges'), false)
        group by file_path
    {%- endset -%}
    {%- do run_query(query) -%}
{% endmacro %}
