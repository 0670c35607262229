{#- The scale of a declared decimal type, or none when `data_type` is not
    one: decimal, decimal(p) and decimal(p,s), also spelled numeric or dec,
    in any case and with any spaces. A decimal without a scale has scale 0,
    as in Spark. The one place that tells a decimal declaration apart. -#}
{% macro decimal_scale(data_type) %}
    {%- set decimal = modules.re.match('^(decimal|numeric|dec)(\\((\\d+)(,(\\d+))?\\))?$',
                                       (data_type or '') | lower | replace(' ', '')) -%}
    {{ return(((decimal.group(5) or '0') | int) if decimal else none) }}
{% endmacro %}
