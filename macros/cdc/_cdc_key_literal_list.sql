{#- The distinct values of `column` among `rows` (a query) as SQL literals
    of `data_type` (_cdc_key_literal), read in one query: `list`, the
    literals joined by commas, none when there is none, more than
    cdc_key_list_max, or one no literal finds; `any`, whether there is a
    value at all. No query when the type has no literal or the limit is 0:
    `any` is then none (not read). -#}
{% macro _cdc_key_literal_list(column, data_type, rows) %}
    {%- set written = _cdc_key_literal('`' ~ column ~ '`', data_type) -%}
    {%- set limit = _cdc_key_list_max() -%}
    {%- if written['literal'] is none or limit <= 0 -%}
        {{ return({'any': none, 'list': none}) }}
    {%- endif -%}
    {%- set query -%}
        select {{ written['literal'] }}, {{ written['unusable'] }}
        from (select distinct `{{ column }}` from ({{ rows }}) as r) as e
        limit {{ limit + 1 }}
    {%- endset -%}
    {%- set found = run_query(query).rows -%}
    {%- set usable = found | selectattr(1) | list | length == 0 and found | length <= limit -%}
    {{ return({'any': found | length > 0,
               'list': (found | map(attribute=0) | join(', ')) if usable and found else none}) }}
{% endmacro %}
