{#-
    dbt-spark's view materialization, with an existing view kept when it is
    already what the model would create, and dropped before it is created
    again otherwise.

    `spark_catalog` is Iceberg's SparkSessionCatalog on a Hive metastore,
    which makes every view an Iceberg view; Iceberg 1.10's `create or
    replace view` writes the new SQL into the view's Iceberg metadata but
    leaves the metastore's copy of the text and columns as they were, and
    Spark reads a view of the session catalog from the metastore. So an
    edited view model, `create or replace`d, went on answering with its
    first SQL without a word (apache/iceberg#15490): hence the drop.

    The new SQL is analysed first (`describe query`: its columns and types;
    its contract too when enforced), so SQL that does not compile fails
    with the old view in place. A view whose text (as Spark reads it) and
    columns are those of the new SQL is kept as it is: a build with nothing
    changed neither drops nor creates it, and its readers never find it
    missing (the log's message for it: "view kept"). Otherwise a reader of
    the view between the drop and the create finds no view. A model that
    persists its docs or sets grants is always created again (those are not
    compared), and so is every view under `--full-refresh`.
-#}
{% materialization view, adapter='spark' -%}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- if existing is not none and existing.is_view -%}
        {%- if config.get('contract').enforced -%}
            {%- do get_assert_columns_equivalent(sql) -%}
        {%- endif -%}
        {%- if _view_is_unchanged(existing, sql) -%}
            {{ run_hooks(pre_hooks) }}
            {%- call noop_statement('main', message='view kept', code='OK', rows_affected=0) -%}
                /* {{ existing }}: view kept, its SQL and columns unchanged; not created again */
            {%- endcall -%}
            {{ run_hooks(post_hooks) }}
            {{ return({'relations': [existing]}) }}
        {%- endif -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {{ return(create_or_replace_view()) }}
{%- endmaterialization %}
