{#- Whether the existing view `relation` is already what the view
    materialization would create from `sql`: `describe query` of the new
    SQL (which fails on SQL that does not compile) gives its columns and
    types, compared with the view's, and the SQL is compared with the
    view's text as Spark reads it. Spark keeps a view's text from its first
    token to its last, so comments and blank space around the SQL are left
    out of the comparison. False for a model that persists its docs or sets
    grants (not compared), and under `--full-refresh`. -#}
{% macro _view_is_unchanged(relation, sql) %}
    {%- call statement('view_columns', fetch_result=true) -%}
        describe query {{ sql }}
    {%- endcall -%}
    {%- set columns = [] -%}
    {%- for row in load_result('view_columns').table -%}
        {%- do columns.append(row[0] ~ ' ' ~ row[1]) -%}
    {%- endfor -%}
    {%- if should_full_refresh() or config.persist_relation_docs() or config.persist_column_docs()
           or config.get('grants') -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set re = modules.re -%}
    {%- set around = '(?:\\s|--[^\\n]*|/[*].*?[*]/)*' -%}
    {%- set body = re.sub('(?s)' ~ around ~ '$', '', re.sub('(?s)^' ~ around, '', sql), count=1) -%}
    {%- set view = _relation_description(relation) -%}
    {{ return(view['type'] == 'VIEW' and view['text'] is not none
              and view['text'] | trim == body and view['columns'] == columns) }}
{% endmacro %}
