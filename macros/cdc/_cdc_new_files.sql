{#
    Step 1 of a CDC run: find the files to read. Lists every file under the
    source's location (no content is read) and keeps those this model has
    not logged yet, by path and modification time, so a file that lands late
    with an old modification time (a copy or a restore) is found like any
    other. The list is frozen for the run in a cached table
    `<model>__cdc_files` (data files: is_data; others are logged as ignored
    by cdc_apply), so what is logged is exactly what was listed.

    Returns the data files' paths, for bronze_select(). Commands that only
    compile (compile, docs, lint templaters) list nothing: none.
#}
{% macro _cdc_new_files(node, incremental) %}
    {%- if flags.WHICH not in ('run', 'build') -%}{{ return(none) }}{%- endif -%}
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
    {%- do _cdc_stage_new_lines(node, cfg, paths) -%}
    {%- do _cdc_count_skipped_events(node, cfg, paths) -%}
    {{ return(paths) }}
{% endmacro %}

{#
    The lines of just the new files, as an external text table
    `<source>__new_lines__<model>` in the bronze schema (re-created each run;
    dropping it never touches the files): its path is a glob naming each new
    file, so a run reads the files landed since the last one, not every file
    ever landed (a `_metadata.file_path` filter on the whole folder's table
    does not prune the scan). CSV and Debezium only: Parquet files are read
    one by one anyway.
#}
{% macro _cdc_new_lines_table(node) -%}
    {{ return(node.schema ~ '.' ~ (node.identifier or node.name) ~ '__new_lines__' ~ this.identifier) }}
{%- endmacro %}

{#- Whether the new files are read through that table: text formats, and
    paths a glob can name (an escaped character, e.g. %20, cannot) -#}
{% macro _cdc_new_lines_usable(node, paths) -%}
    {%- set escaped = [] -%}
    {%- for path in paths if '%' in path -%}{%- do escaped.append(path) -%}{%- endfor -%}
    {{ return(bronze_external_config(node)['format'] in ('csv', 'debezium') and paths | length > 0
              and escaped | length == 0) }}
{%- endmacro %}

{% macro _cdc_stage_new_lines(node, cfg, paths) %}
    {%- set table = _cdc_new_lines_table(node) -%}
    {%- if not _cdc_new_lines_usable(node, paths) -%}
        {%- do run_query('drop table if exists ' ~ table) -%}
        {{ return(none) }}
    {%- endif -%}
    {#- the folder every new file is under, then each file relative to it -#}
    {%- set parts = paths[0].split('/')[:-1] -%}
    {%- set common = {'n': parts | length} -%}
    {%- for path in paths -%}
        {%- set other = path.split('/') -%}
        {%- for i in range(common['n']) if i >= other | length - 1 or other[i] != parts[i] -%}
            {%- if common.update({'n': [common['n'], i] | min}) -%}{%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set folder = parts[:common['n']] | join('/') -%}
    {%- set names = [] -%}
    {%- for path in paths -%}
        {#- glob metacharacters in a name are taken literally -#}
        {%- set name = path[folder | length + 1:] -%}
        {%- for char in ['\\', '{', '}', '[', ']', '*', '?', ','] -%}
            {%- set name = name.replace(char, '\\' ~ char) -%}
        {%- endfor -%}
        {%- do names.append(name) -%}
    {%- endfor -%}
    {%- do _bronze_external_table(table, ['value'], 'text',
                                  {'path': folder ~ '/{' ~ names | join(',') ~ '}', 'lineSep': '\n'}) -%}
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
            from {{ _cdc_new_lines_table(node) if _cdc_new_lines_usable(node, paths)
                    else node.schema ~ '.' ~ (node.identifier or node.name) ~ '__lines' }}
            where _metadata.file_path in ({{ literals | join(', ') }})
        ) as lines
        where coalesce(map_contains_key(fields, 'ddl') or map_contains_key(fields, 'tableChanges'), false)
        group by file_path
    {%- endset -%}
    {%- do run_query(query) -%}
{% endmacro %}
