{#
    Debezium sends `__debezium_unavailable_value` for an unchanged TOAST
    column: the change carries no value for it (cdc_changes lists such
    columns in `_cdc_unavailable` and sets them NULL). Within the batch a
    change takes, for each such column, the value of the latest earlier
    change of its key that did carry one, and the column leaves the list;
    what is still listed keeps the stored value in the MERGE
    (_cdc_merge_sql). A delete gives no value, and none from before it
    passes it. `_cdc_filled_from` maps each column filled so to the
    sequence of the change that gave it: a change older than the stored
    row (late) cannot give a value to a newer one (_cdc_order_batch then
    keeps the stored value). SQL over all the batch's rows, same columns
    plus `_cdc_filled` and `_cdc_filled_from`: rows of held files and rows
    with a reject reason neither give nor take a value (one pass over the
    batch, no union).
#}
{% macro _cdc_fill_unavailable(batch, columns, fillable, keys, seq) %}
    {%- set window -%}
        partition by _cdc_filled, {% for key in keys %}`{{ key }}`{{ ', ' if not loop.last }}{% endfor %}
        order by {% for column in seq %}`{{ column }}`, {% endfor %}_cdc_file desc, _cdc_row desc
        rows between unbounded preceding and 1 preceding
    {%- endset %}
    select
        {%- for name in columns %}
        {%- if name in fillable %}
        case when _cdc_filled and array_contains(_cdc_unavailable, {{ sql_string(name) }})
                  and {{ _cdc_fill_given(loop.index) }}
            then _fill_{{ loop.index }}.v else `{{ name }}` end as `{{ name }}`,
        {%- elif name == '_cdc_unavailable' %}
        case when _cdc_filled then filter(_cdc_unavailable, c -> case
            {%- for other in columns if other in fillable %}
            when c = {{ sql_string(other) }} then not {{ _cdc_fill_given(columns.index(other) + 1) }}
            {%- endfor %}
            else true end) else _cdc_unavailable end as _cdc_unavailable,
        {%- else %}
        `{{ name }}`,
        {%- endif %}
        {%- endfor %}
        _cdc_filled,
        {#- the first entry types the map when no column is fillable -#}
        map_filter(map('', case when false then {{ _cdc_seq_struct(none, seq) }} end
            {%- for name in columns if name in fillable %},
            {{ sql_string(name) }}, case when _cdc_filled and array_contains(_cdc_unavailable, {{ sql_string(name) }})
                and {{ _cdc_fill_given(columns.index(name) + 1) }} then _fill_{{ columns.index(name) + 1 }}.s end
            {%- endfor %}), (c, s) -> s is not null) as _cdc_filled_from
    from (
        select
            *,
            {#- the key's latest delete before the change: a value from before
                it is not the key's any more -#}
            max(case when _cdc_is_delete then {{ _cdc_seq_struct(none, seq) }} end) over ({{ window }})
                as _fill_after,
            {%- for name in columns if name in fillable %}
            last_value(case when not array_contains(_cdc_unavailable, {{ sql_string(name) }}) and not _cdc_is_delete
                            then named_struct('v', `{{ name }}`, 's', {{ _cdc_seq_struct(none, seq) }}) end, true)
                over ({{ window }})
                as _fill_{{ columns.index(name) + 1 }}{{ ',' if not loop.last }}
            {%- endfor %}
        from (select *, not _cdc_held and _cdc_reason is null as _cdc_filled from {{ batch }}) as flagged
    ) as filled
{% endmacro %}

{#- Whether the change's column number `index` takes the value found for
    it: one was found, and it is newer than the key's latest delete before
    the change -#}
{% macro _cdc_fill_given(index) -%}
    (_fill_{{ index }} is not null and (_fill_after is null or _fill_{{ index }}.s > _fill_after))
{%- endmacro %}

{#- Debezium's placeholder for an unchanged TOAST value (not a value) -#}
{% macro _cdc_unavailable_placeholder() %}{{ return('__debezium_unavailable_value') }}{% endmacro %}
