{#
    Override of dbt-spark's seed reset, which drops a seed's table and
    creates it again on every `dbt seed` or `dbt build`. On Iceberg that
    left each earlier version's data and metadata files in the table's
    folder (DROP TABLE without PURGE keeps them: 58 loads of the sample's
    seed had left 58 data and 116 metadata files, 2026-12-02), left readers
    without the table between the drop and the insert, and gave the table a
    new snapshot even when the CSV had not changed.

    Here an Iceberg table that has the seed's columns (names and types, as
    create_csv_table would write them) is kept: its rows are replaced in
    place, or left as they are, by spark__load_csv_rows. A full refresh, a
    changed column, an empty seed (dbt loads no row then) or a table of
    another format is dropped, an Iceberg one with its files (PURGE), and
    created again.
#}
{% macro spark__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
    {%- if not full_refresh and old_relation.is_iceberg and agate_table.rows | length > 0
           and _seed_table_columns(old_relation) == _seed_columns(model, agate_table) -%}
        {{ return('') }}
    {%- endif -%}
    {%- call statement('drop_seed_table') -%}
        drop table if exists {{ old_relation.render() }}{{ ' purge' if old_relation.is_iceberg }}
    {%- endcall -%}
    {%- do adapter.cache_dropped(old_relation) -%}
    {{ return(create_csv_table(model, agate_table)) }}
{% endmacro %}

{#- The columns create_csv_table gives a seed's table: [(name, type)], both
    in lower case, types without spaces; (var)char(n) as Iceberg stores it,
    a string -#}
{% macro _seed_columns(model, agate_table) %}
    {%- set types = model['config'].get('column_types', {}) -%}
    {%- set columns = [] -%}
    {%- for name in agate_table.column_names -%}
        {%- set data_type = types.get(name, adapter.convert_type(agate_table, loop.index0)) -%}
        {%- set data_type = modules.re.sub('^(var)?char\\(\\d+\\)$', 'string', data_type | lower | replace(' ', '')) -%}
        {%- do columns.append(((name | string | lower), data_type)) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}

{#- A table's columns in the same shape as _seed_columns -#}
{% macro _seed_table_columns(relation) %}
    {%- set columns = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- do columns.append(((column.name | lower), (column.data_type | lower | replace(' ', '')))) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
