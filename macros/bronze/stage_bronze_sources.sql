{#
    Create or refresh the external tables behind the bronze sources that have
    `meta.external`: at the start of every dbt invocation (on-run-start),
    those the selected models and tests read; on demand, every one (`dbt
    run-operation stage_bronze_sources`, or `--args '{select: [names]}'`).

    Per source table `<name>` in schema `<schema>` it creates, over every file
    under the table's location (recursively, so DMS date folders work too):
      <schema>.<name>__files  the file listing (path, landing time, size);
                              no file content is read through it
      <schema>.<name>__lines  CSV and Debezium JSON lines: the files' lines
                              as raw text, parsed by bronze_select() (never
                              by Spark's CSV or JSON reader, which lose rows
                              or their text on malformed input); Parquet
                              files are read one by one, on their own schema
      <schema>.<name>         a view: the rows of the data files, normalised
                              by bronze_select()
    (A CDC run adds `<name>__new_lines__<model>`, the lines of just the files
    new to that model: _cdc_new_files.)
    The tables are external (dropping them never touches the files) and are
    re-created each time, so a column added to the YAML or a file landed
    since the last run is seen without restarting Spark. Spark never lists
    hidden files (names starting with `_` or `.`, e.g. `_SUCCESS`, `.crc`).
#}
{% macro stage_bronze_sources(select=none) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set needed = _bronze_sources_selected() if select is none else none -%}
    {%- set staged = [] -%}
    {%- for node in graph.sources.values() -%}
        {%- if (node.meta or {}).get('external') or (node.source_meta or {}).get('external') -%}
            {%- if (select is none and (needed is none or node.unique_id in needed))
                  or (select is not none and (node.name in select or node.source_name in select)) -%}
                {%- do _stage_bronze_table(node) -%}
                {%- do staged.append(node.source_name ~ '.' ~ node.name) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do log('bronze: staged ' ~ staged | length ~ ' external source table(s)', info=true) -%}
    {{ return('') }}
{% endmacro %}

{#- The sources the invocation's selected nodes read (their own direct
    dependencies: only CDC models and source tests read bronze); none, for
    every source, when the command selects no nodes (run-operation: dbt
    keeps `selected_resources` in a process-wide variable, so there it may
    still hold an earlier in-process command's selection). -#}
{% macro _bronze_sources_selected() %}
    {%- if flags.WHICH not in ('run', 'build', 'test', 'seed', 'snapshot')
          or selected_resources is not defined or not selected_resources -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set needed = [] -%}
    {%- for unique_id in selected_resources -%}
        {%- if unique_id.startswith('source.') -%}
            {%- do needed.append(unique_id) -%}
        {%- elif unique_id in graph.nodes -%}
            {%- for parent in graph.nodes[unique_id].depends_on.nodes if parent.startswith('source.') -%}
                {%- do needed.append(parent) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(needed) }}
{% endmacro %}

{% macro _stage_bronze_table(node) %}
    {%- set cfg = bronze_external_config(node) -%}
    {%- set base = node.schema ~ '.' ~ (node.identifier or node.name) -%}
    {%- do run_query('create database if not exists ' ~ node.schema) -%}
    {%- set recursive = {'path': cfg['location'], 'recursiveFileLookup': 'true'} -%}
    {%- do _bronze_external_table(base ~ '__files', none, 'binaryFile', recursive) -%}
    {%- if cfg['format'] in ('csv', 'debezium') -%}
        {#- lines split on \n only: a \r (CRLF, or inside a quoted value) stays data -#}
        {%- do _bronze_external_table(base ~ '__lines', ['value'], 'text',
                                      dict(recursive, lineSep='\n')) -%}
    {%- endif -%}
    {#- Parquet: each file is read on its own schema (see bronze_select) -#}
    {#- drop + create rather than `create or replace`: the latter's existence
        check through the Iceberg session catalog once raced into
        "AlreadyExistsException" on a fresh metastore -#}
    {%- do run_query('drop view if exists ' ~ base) -%}
    {%- do run_query('create view ' ~ base ~ ' as ' ~ bronze_select(node)) -%}
{% endmacro %}

{#- One external table over files, dropped and created again; columns are all
    strings (none: the format's own schema). -#}
{% macro _bronze_external_table(table, columns, using, options) %}
    {%- do run_query('drop table if exists ' ~ table) -%}
    {%- set ddl -%}
        create table {{ table }}
        {%- if columns %} (
            {%- for column in columns %}
            `{{ column }}` string{{ ',' if not loop.last }}
            {%- endfor %}
        )
        {%- endif %}
        using {{ using }}
        options (
            {%- for key, value in options.items() %}
            {{ sql_string(key) }} {{ sql_string(value) }}{{ ',' if not loop.last }}
            {%- endfor %}
        )
    {%- endset -%}
    {%- do run_query(ddl) -%}
    {#- a dropped table's file listing can outlive it in Spark's relation
        cache (the Iceberg session catalog does not invalidate it): refresh -#}
    {%- do run_query('refresh table ' ~ table) -%}
{% endmacro %}
