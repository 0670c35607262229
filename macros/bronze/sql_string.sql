{#
    A value as a Spark SQL string literal, quoted and escaped. Every text
    that comes from data or the file system (file paths, header names,
    values) goes into SQL through this macro and nowhere else, so a file
    named `x'); drop table t; --.csv` stays a string.
#}
{% macro sql_string(value) -%}
    '{{ (value | string).replace('\\', '\\\\').replace("'", "\\'") }}'
{%- endmacro %}
