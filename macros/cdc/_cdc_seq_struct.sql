{#- The sequence columns of `alias` (none: unqualified) as one comparable
    struct: a change is newer than another when its struct is greater
    (columns in priority order). -#}
{% macro _cdc_seq_struct(alias, columns) -%}
    named_struct({% for column in columns %}'s{{ loop.index }}', {{ alias ~ '.' if alias }}`{{ column }}`{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}
