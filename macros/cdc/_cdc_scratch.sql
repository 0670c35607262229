{#
    A query's rows (a CDC run's batch; the keys replace_by_key recomputes),
    written once as Parquet files and read back through a temporary view
    `name` (returned; `shared`: a global temporary view, which every session
    of the Spark application sees, returned as `global_temp.<name>`). Not a
    cached view: Spark recomputes a
    cached plan when a table it reads is written, and the batch reads the
    target it is applied to. Not an Iceberg table: creating, committing and
    purging one cost about three times as much per run.

    The files go to `<warehouse>/_cdc_scratch/<schema>/<folder or name>` (storage every
    executor sees, on a cluster too); `_cdc_scratch_drop` empties the folder,
    subfolders included, at the end of the run, so no change row outlives it
    there (a run killed midway leaves its batch until the model's next run,
    and `lakehouse erase` empties the whole scratch folder).

    `columns`: the query's columns as `name type` (none: the view takes
    the files' schema, which Spark reads from them in a Spark job of its
    own, about 0.08 s of a small run on the 2-core machine).
#}
{% macro _cdc_scratch_write(schema, name, query, folder=none, shared=false, columns=none) %}
    {%- set path = _cdc_scratch_path(schema, folder or name) -%}
    {%- do run_query('insert overwrite directory ' ~ sql_string(path) ~ ' using parquet\n' ~ query) -%}
    {%- do run_query('create or replace ' ~ ('global ' if shared else '') ~ 'temporary view ' ~ name
                     ~ (' (' ~ columns | join(', ') ~ ')' if columns else '')
                     ~ ' using parquet options (path ' ~ sql_string(path) ~ ')') -%}
    {{ return(('global_temp.' if shared else '') ~ name) }}
{% endmacro %}

{% macro _cdc_scratch_drop(schema, name, folder=none) %}
    {%- do run_query('drop view if exists ' ~ name) -%}
    {%- do run_query('insert overwrite directory ' ~ sql_string(_cdc_scratch_path(schema, folder or name))
                     ~ ' using parquet select 1 as emptied where false') -%}
{% endmacro %}

{% macro _cdc_scratch_path(schema, name) %}
    {%- set warehouse = run_query('set spark.sql.warehouse.dir').rows[0][1] -%}
    {{ return(warehouse.rstrip('/') ~ '/_cdc_scratch/' ~ schema ~ '/' ~ name) }}
{% endmacro %}
