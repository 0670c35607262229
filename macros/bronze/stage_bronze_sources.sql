{#
    Create or refresh the external tables behind every bronze source that has
    `meta.external` (run at the start of every dbt invocation through
    on-run-start, and on demand: `dbt run-operation stage_bronze_sources`).

    Per source table `<name>` in schema `<schema>` it creates
      <schema>.<name>__load  full-load files (LOAD*)
      <schema>.<name>__cdc   CDC files (everything else, recursively, so the
                             date folders of DatePartitionEnabled work too)
      <schema>.<name>        a view: both, normalised by bronze_select()
    The tables are external (dropping them never touches the files) and are
    re-created each time, so a column added to the YAML or a file landed
    since the last run is seen without restarting Spark.
#}
{% macro stage_bronze_sources(select=none) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set staged = [] -%}
    {%- for node in graph.sources.values() -%}
        {%- if (node.meta or {}).get('external') or (node.source_meta or {}).get('external') -%}
            {%- if select is none or node.name in select or node.source_name in select -%}
                {%- do _stage_bronze_table(node) -%}
                {%- do staged.append(node.source_name ~ '.' ~ node.name) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do log('bronze: staged ' ~ staged | length ~ ' external source table(s)', info=true) -%}
    {{ return('') }}
{% endmacro %}

{% macro _stage_bronze_table(node) %}
    {%- set cfg = bronze_external_config(node) -%}
    {%- set base = node.identifier or node.name -%}
    {%- set columns = bronze_file_columns(node) | map(attribute='name') | list -%}
    {%- do run_query('create database if not exists ' ~ node.schema) -%}
    {%- for phase in ['load', 'cdc'] -%}
        {%- set table = node.schema ~ '.' ~ base ~ '__' ~ phase -%}
        {%- set header_columns = [cfg['timestamp_column'], cfg['sequence_column']] -%}
        {%- if cfg['format'] == 'debezium' -%}
            {%- set header_columns = [cfg['op_column']] + header_columns + [cfg['deleted_column']] -%}
        {%- elif phase == 'cdc' or cfg['full_load_op'] == 'included' -%}
            {%- set header_columns = [cfg['op_column']] + header_columns -%}
        {%- endif -%}
        {%- set options = {
            'path': cfg['location'],
            'pathGlobFilter': cfg['load_glob'] if phase == 'load' else cfg['cdc_glob'],
            'recursiveFileLookup': 'false' if phase == 'load' else 'true',
        } -%}
        {%- if cfg['format'] == 'csv' -%}
            {%- do options.update({'header': 'true', 'multiLine': 'true', 'escape': '"',
                                   'nullValue': cfg['null_value'], 'mode': 'PERMISSIVE'}) -%}
        {%- elif cfg['format'] == 'debezium' -%}
            {#- JSON lines; every column declared string, so numbers keep their text -#}
            {%- do options.update({'mode': 'PERMISSIVE'}) -%}
        {%- else -%}
            {%- do options.update({'mergeSchema': 'true'}) -%}
        {%- endif -%}
        {%- do options.update(cfg['options']) -%}
        {%- do run_query('drop table if exists ' ~ table) -%}
        {%- set ddl -%}
            create table {{ table }} (
                {%- for column in header_columns + columns %}
                `{{ column }}` string{{ ',' if not loop.last }}
                {%- endfor %}
            )
            using {{ 'json' if cfg['format'] == 'debezium' else cfg['format'] }}
            options (
                {%- for key, value in options.items() %}
                '{{ key }}' '{{ value | replace("'", "\\'") }}'{{ ',' if not loop.last }}
                {%- endfor %}
            )
        {%- endset -%}
        {%- do run_query(ddl) -%}
        {#- a dropped table's file listing can outlive it in Spark's relation
            cache (the Iceberg session catalog does not invalidate it): refresh -#}
        {%- do run_query('refresh table ' ~ table) -%}
    {%- endfor -%}
    {#- drop + create rather than `create or replace`: the latter's existence
        check through the Iceberg session catalog once raced into
        "AlreadyExistsException" on a fresh metastore -#}
    {%- do run_query('drop view if exists ' ~ node.schema ~ '.' ~ base) -%}
    {%- do run_query('create view ' ~ node.schema ~ '.' ~ base ~ ' as ' ~ bronze_select(node)) -%}
{% endmacro %}
