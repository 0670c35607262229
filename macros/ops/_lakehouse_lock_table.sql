{#
    The build lock's table, `<target schema>_ops.lakehouse_lock`: one row per
    lock name, created with that row in one atomic CTAS. Updates rewrite the
    row's file (copy-on-write) under serializable isolation, so of two
    concurrent conditional UPDATEs Iceberg's commit validation lets exactly
    one through: the table is the compare-and-swap.
#}
{% macro _lakehouse_lock_table(lock_name) %}
    {%- set schema = target.schema ~ '_ops' -%}
    {%- set table = schema ~ '.lakehouse_lock' -%}
    {%- do run_query('create database if not exists ' ~ schema) -%}
    {%- set existing = run_query("show tables in " ~ schema ~ " like 'lakehouse_lock'") -%}
    {%- if existing.rows | length == 0 -%}
        {%- do run_query(
            "create table if not exists " ~ table ~ " using iceberg tblproperties ("
            ~ "'format-version' = '2', "
            ~ "'write.update.mode' = 'copy-on-write', "
            ~ "'write.update.isolation-level' = 'serializable', "
            ~ "'write.delete.mode' = 'copy-on-write', "
            ~ "'write.delete.isolation-level' = 'serializable') as "
            ~ "select cast('" ~ lock_name ~ "' as string) as lock_name, "
            ~ "cast(null as string) as holder, cast(null as string) as purpose, "
            ~ "cast(null as string) as held_by, cast(null as timestamp) as acquired_at, "
            ~ "cast(null as timestamp) as expires_at") -%}
    {%- endif -%}
    {{ return(table) }}
{% endmacro %}
