{#-
    dbt-spark's view materialization, with an existing view dropped before
    it is created again. `spark_catalog` is Iceberg's SparkSessionCatalog on
    a Hive metastore, which makes every view an Iceberg view; Iceberg 1.10's
    `create or replace view` writes the new SQL into the view's Iceberg
    metadata but leaves the metastore's copy of the text and columns as
    they were, and Spark reads a view of the session catalog from the
    metastore. So an edited view model, `create or replace`d, went on
    answering with its first SQL without a word (apache/iceberg#15490). A
    reader of the view between the drop and the create finds no view.
-#}
{% materialization view, adapter='spark' -%}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- if existing is not none and existing.is_view -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {{ return(create_or_replace_view()) }}
{%- endmaterialization %}
