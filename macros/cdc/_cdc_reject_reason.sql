{#
    The reject rules on a change's key, operation and sequence, written once:
    a `case` giving the first reason that applies, or null. Used by
    cdc_changes on the raw fields of the files (`blank_is_missing`: an
    empty or blank field is missing too) and by _cdc_order_batch on the
    model's own columns (keys and sequence columns the model derived).
      missing_key: <column>       a key column is null, except on a keyless
                                  row (`keyless`: a truncate)
      unknown_op: <value>         the operation is null or not one of
                                  `operations` (`null_op_hint`, text
                                  added when it is null)
      missing_sequence: <column>  a column of `sequence` is null
#}
{% macro _cdc_reject_reason(keys, operation_column, operations, sequence, keyless='false', blank_is_missing=false,
                            null_op_hint=none) -%}
    case
        {%- for key in keys %}
        when not ({{ keyless }}) and (`{{ key }}` is null{{ " or trim(`" ~ key ~ "`) = ''" if blank_is_missing }})
            then 'missing_key: {{ key }}'
        {%- endfor %}
        when `{{ operation_column }}` is null or `{{ operation_column }}` not in ('{{ operations | join("', '") }}')
            then concat('unknown_op: ', coalesce(`{{ operation_column }}`, 'null')
                        {%- if null_op_hint %}, case when `{{ operation_column }}` is null then {{ sql_string(null_op_hint) }} else '' end{% endif %})
        {%- for column in sequence %}
        when `{{ column }}` is null then 'missing_sequence: {{ column }}'
        {%- endfor %}
    end
{%- endmacro %}
