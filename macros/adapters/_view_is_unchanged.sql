{#- Whether the existing view `relation` is already what the view
    materialization would create from `sql`: runs the materialization's
    `main` statement, `describe query` of the new SQL (which fails on SQL
    that does not compile), and compares its columns and types and the SQL
    with the view's, as Spark reads them. False for a model that persists
    its docs or sets grants, which are not compared. -#}
{% macro _view_is_unchanged(relation, sql) %}
    {%- call statement('main', fetch_result=true) -%}
        describe query {{ sql }}
    {%- endcall -%}
    {%- set columns = [] -%}
    {%- for row in load_result('main').table -%}
        {%- do columns.append(row[0] ~ ' ' ~ row[1]) -%}
    {%- endfor -%}
    {%- if config.persist_relation_docs() or config.persist_column_docs() or config.get('grants') -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set view = _relation_description(relation) -%}
    {{ return(view['type'] == 'VIEW' and view['text'] is not none
              and view['text'] | trim == sql | trim and view['columns'] == columns) }}
{% endmacro %}
