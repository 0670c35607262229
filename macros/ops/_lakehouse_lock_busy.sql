{# Fail with a message that names the holder and says what to do. #}
{% macro _lakehouse_lock_busy(table, state) %}
    {%- set state = state or {} -%}
    {{ exceptions.raise_compiler_error(
        "lakehouse lock busy: another build is running on this warehouse: " ~ state.get('purpose')
        ~ " (dbt invocation " ~ state.get('holder') ~ ", " ~ state.get('held_by')
        ~ ") since " ~ state.get('acquired_at') ~ " UTC, lock " ~ table ~ " valid until "
        ~ state.get('expires_at') ~ " UTC. Nothing was changed by this run. Wait for that build "
        ~ "to finish and run again. If it is dead (killed), the lock expires at that time, or "
        ~ "release it now: dbt run-operation lakehouse_lock_release --args '{force: true}'") }}
{% endmacro %}
