{# The lock row as a dict (holder, purpose, held_by, acquired_at, expires_at,
   expired), or none when the row is missing. #}
{% macro _lakehouse_lock_state(table, lock_name) %}
    {%- set rows = run_query(
        "select holder, purpose, held_by, cast(acquired_at as string), "
        ~ "cast(expires_at as string), coalesce(expires_at < current_timestamp(), true) "
        ~ "from " ~ table ~ " where lock_name = '" ~ lock_name ~ "'").rows -%}
    {%- if rows | length == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set row = rows[0] -%}
    {{ return({'holder': row[0], 'purpose': row[1], 'held_by': row[2],
               'acquired_at': row[3], 'expires_at': row[4], 'expired': row[5]}) }}
{% endmacro %}
