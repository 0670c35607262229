{#-
    The model's primary key: `column_name` (the test under a column) or
    `columns` (under the model, a key of several columns) is never null and
    never repeated. One query for both rules, where `unique` and `not_null`
    are one each: every build runs it on every model, and each Spark query
    costs 0.1-0.2 s whatever the rows (docs/benchmark.md, 2026-12-02).
    Returns one row per offending key value: the value, its rows
    (`occurrences`) and `failure` ('null key' or 'duplicate key').
-#}
{% test primary_key(model, column_name=none, columns=none) %}
    {%- set key = columns if columns else [column_name] -%}
    {%- if not key or none in key -%}
        {%- do exceptions.raise_compiler_error("primary_key on " ~ model ~ ": put it under the key column, "
            ~ "or under the model with `arguments: {columns: [a, b]}`") -%}
    {%- endif -%}
    {%- set any_null = key | join(' is null or ') ~ ' is null' -%}
    select
        {{ key | join(', ') }},
        count(*) as occurrences,
        case when {{ any_null }} then 'null key' else 'duplicate key' end as failure
    from {{ model }}
    group by {{ key | join(', ') }}
    having count(*) > 1 or {{ any_null }}
{% endtest %}
