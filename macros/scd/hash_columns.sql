{#
    The one hashing macro, for surrogate keys and hash-diffs alike.

    Columns are hashed in the order given, each cast to string, backslashes
    and the separator escaped, NULL written as the token \N, joined with '|',
    then SHA-256. So ('a', null), (null, 'a') and ('a|', '') all differ, and
    a value that is literally \N differs from NULL.

    columns  list of column names or SQL expressions
    alias    optional table alias put in front of plain column names
#}
{% macro hash_columns(columns, alias=none) %}
    {#- `adapter` is absent when sqlfluff renders models offline -#}
    {%- if adapter is defined -%}
        {{ return(adapter.dispatch('hash_columns', 'lakehouse_cdc')(columns, alias)) }}
    {%- endif -%}
    {{ return(default__hash_columns(columns, alias)) }}
{% endmacro %}

{% macro default__hash_columns(columns, alias=none) %}
    {%- if columns is string -%}{%- set columns = [columns] -%}{%- endif -%}
    sha2(concat_ws('|'
    {%- for column in columns -%}
        {%- set expr = (alias ~ '.' ~ column) if alias and modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', column) else column -%}
        , coalesce(replace(replace(cast({{ expr }} as string), '\\', '\\\\'), '|', '\\|'), '\\N')
    {%- endfor -%}
    ), 256)
{%- endmacro %}
