{#-
    dbt-spark's view materialization, with an existing view dropped before
    it is created again. `spark_catalog` is Iceberg's SparkSessionCatalog on
    a Hive metastore, which makes every view an Iceberg view; Iceberg 1.10's
    `create or replace view` writes the new SQL into the view's Iceberg
    metadata but leaves the metastore's copy of the text and columns as
    they were, and Spark reads a view of the session catalog from the
    metastore. So an edited view model, `create or replace`d, went on
    answering with its first SQL without a word (apache/iceberg#15490).
    The new SQL is analysed first (its columns, and its contract when
    enforced), so SQL that does not compile fails with the old view in
    place; a reader of the view between the drop and the create finds no
    view.
-#}
{% materialization view, adapter='spark' -%}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- if existing is not none and existing.is_view -%}
        {%- if config.get('contract').enforced -%}
            {%- do get_assert_columns_equivalent(sql) -%}
        {%- else -%}
            {%- do get_columns_in_query(sql) -%}
        {%- endif -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {{ return(create_or_replace_view()) }}
{%- endmaterialization %}
