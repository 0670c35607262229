{#
    Override of dbt-spark's relation listing.

    Iceberg tables registered in a Hive metastore (our `spark_catalog` is
    Iceberg's SparkSessionCatalog of type `hive`) report `Provider: hive` in
    `show table extended`, so dbt-spark marks them as non-Iceberg and the
    second run of a snapshot fails with "The existing table ... is in another
    format than 'delta' or 'iceberg' or 'hudi'". Their `Table Properties`
    do carry `table_type=ICEBERG`: we add the `Provider: iceberg` line dbt-spark
    looks for. Rows are returned as 4-tuples, the shape dbt-spark unpacks.
#}
{% macro spark__list_relations_without_caching(relation) %}
    {% call statement('list_relations_without_caching', fetch_result=True) -%}
        show table extended in {{ relation.schema }} like '*'
    {%- endcall %}
    {% set rows = [] %}
    {% for row in load_result('list_relations_without_caching').table %}
        {% set information = row[3] %}
        {% if 'TABLE_TYPE=ICEBERG' in (information | upper) and 'Provider: iceberg' not in information %}
            {% set information = information ~ '\nProvider: iceberg\n' %}
        {% endif %}
        {% do rows.append((row[0], row[1], row[2], information)) %}
    {% endfor %}
    {{ return(rows) }}
{% endmacro %}
