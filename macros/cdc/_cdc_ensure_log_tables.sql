{#
    The bookkeeping tables shared by all CDC models of a schema:
      cdc_file_log    every file each model has listed: applied (with its
                      rows in the file, read, applied, superseded,
                      quarantined, and the Debezium schema-change events
                      it held, skipped) or ignored (not a data file);
                      `lakehouse erase` adds, as erased, the version of a
                      file it rewrote (_cdc_logged)
      cdc_run_audit   one row per model run that found new files: files, rows read, applied,
                      superseded, quarantined (each counted on its own),
                      non-data files ignored, incomplete files held back,
                      and the Iceberg snapshot written
      cdc_quarantine  rows that could not be applied, with file, row, reason
                      and the row as written
    Columns added since a table was created are added to it here. The
    columns are first looked up in the table's listing dbt cached at the
    start of the invocation (its `show table extended` text); only a table
    whose listing lacks one is described (three statements less per run).
#}
{% macro _cdc_ensure_log_tables(schema) %}
    {%- set tables = {
        'cdc_file_log': [('model_name', 'string'), ('file_path', 'string'), ('file_modified_at', 'timestamp'),
                         ('row_count', 'bigint'), ('applied_at', 'timestamp'), ('run_id', 'string'),
                         ('status', 'string'), ('file_size', 'bigint'), ('rows_in_file', 'bigint'),
                         ('rows_applied', 'bigint'), ('rows_superseded', 'bigint'), ('rows_quarantined', 'bigint'),
                         ('events_skipped', 'bigint')],
        'cdc_run_audit': [('model_name', 'string'), ('run_id', 'string'), ('run_started_at', 'timestamp'),
                          ('finished_at', 'timestamp'), ('is_initial', 'boolean'), ('files_read', 'bigint'),
                          ('rows_read', 'bigint'), ('rows_applied', 'bigint'), ('rows_superseded', 'bigint'),
                          ('rows_quarantined', 'bigint'), ('snapshot_id', 'bigint'), ('files_ignored', 'bigint'),
                          ('files_held', 'bigint')],
        'cdc_quarantine': [('model_name', 'string'), ('run_id', 'string'), ('file_path', 'string'),
                           ('row_number', 'bigint'), ('reason', 'string'), ('record', 'string'),
                           ('quarantined_at', 'timestamp')],
    } -%}
    {%- set relations = {} -%}
    {%- for table in tables -%}
        {%- do relations.update({table: adapter.get_relation(database=none, schema=schema, identifier=table)}) -%}
    {%- endfor -%}
    {#- (a schema that lists the three tables exists) -#}
    {%- if none in relations.values() | list -%}
        {%- do run_query('create database if not exists ' ~ schema) -%}
    {%- endif -%}
    {%- for table, columns in tables.items() -%}
        {%- set relation = relations[table] -%}
        {%- if relation is none -%}
            {%- set ddl -%}
                create table if not exists {{ schema }}.{{ table }} (
                    {%- for name, data_type in columns %}
                    {{ name }} {{ data_type }}{{ ',' if not loop.last }}
                    {%- endfor %}
                ) using iceberg
            {%- endset -%}
            {%- do run_query(ddl) -%}
        {%- elif _cdc_unlisted_columns(relation, columns | map(attribute=0) | list) -%}
            {%- set existing = adapter.get_columns_in_relation(relation) | map(attribute='name') | list -%}
            {%- for name, data_type in columns if name not in existing -%}
                {%- do run_query('alter table ' ~ schema ~ '.' ~ table ~ ' add columns (' ~ name ~ ' ' ~ data_type ~ ')') -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{#- The names of `wanted` missing from the columns in `relation`'s cached
    listing (dbt-spark keeps the `show table extended` text, whose schema
    lines read ` |-- name: type (nullable = ...)`); all of them when the
    relation carries no such text -#}
{% macro _cdc_unlisted_columns(relation, wanted) %}
    {%- set listed = modules.re.findall('(?m)^ [|]-- ([^:]+): ', relation.information or '') | map('lower') | list -%}
    {{ return(wanted | reject('in', listed) | list) }}
{% endmacro %}
