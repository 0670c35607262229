{#
    Take the project's build lock for this dbt invocation, or fail fast with
    a message naming the invocation that holds it. Wired as the first
    on-run-start hook; table maintenance calls it too
    (`dbt run-operation lakehouse_maintain` takes it before its first change
    and releases it after its last), so maintenance and builds never
    overlap.

    The holder is dbt's invocation_id, or the var `lakehouse_lock_holder`
    when a job made of several dbt invocations holds the lock for all of
    them (`lakehouse erase` sets it: its own `dbt run` then renews the lock
    at start and leaves it held at end, see lakehouse_lock_release). The
    lock expires `ttl_minutes` after it was taken (default var
    `lakehouse_lock_ttl_minutes`, 180), so a build killed with kill -9
    blocks the next one only until then (or until
    `dbt run-operation lakehouse_lock_release --args '{force: true}'`).
    Taking it again with the same holder renews it.
#}
{% macro lakehouse_lock_acquire(purpose=none, lock_name='build', ttl_minutes=none) %}
    {%- if not execute or not _lakehouse_lock_enabled() -%}{{ return('') }}{%- endif -%}
    {#- refused before the lock is taken, never while it is held -#}
    {%- do _bronze_require_utc(none) -%}
    {%- set holder = var('lakehouse_lock_holder', none) or invocation_id -%}
    {%- set purpose = purpose or ('dbt ' ~ flags.WHICH ~ (' within ' ~ holder if holder != invocation_id else '')) -%}
    {%- set ttl = ttl_minutes or var('lakehouse_lock_ttl_minutes', 180) -%}
    {#- `lakehouse dbt` / `lakehouse run` set LAKEHOUSE_LOCK_OWNER to user@host -#}
    {%- set held_by = env_var('LAKEHOUSE_LOCK_OWNER', env_var('USER', 'unknown') ~ '@' ~ env_var('HOSTNAME', 'unknown host')) -%}
    {%- set table = _lakehouse_lock_table(lock_name) -%}
    {%- set state = _lakehouse_lock_state(table, lock_name) -%}
    {%- if state is not none and state.holder and state.holder != holder and not state.expired -%}
        {%- do _lakehouse_lock_busy(table, state) -%}
    {%- endif -%}
    {#- compare-and-swap: only a free, expired or own lock changes hands; a
        concurrent acquirer's commit fails Iceberg's serializable validation -#}
    {%- do run_query(
        "update " ~ table ~ " set holder = '" ~ holder ~ "', "
        ~ "purpose = '" ~ purpose | replace("'", "") ~ "', held_by = '" ~ held_by | replace("'", "") ~ "', "
        ~ "acquired_at = current_timestamp(), "
        ~ "expires_at = current_timestamp() + make_interval(0, 0, 0, 0, 0, " ~ ttl | int ~ ", 0) "
        ~ "where lock_name = '" ~ lock_name ~ "' and (holder is null or holder = '" ~ holder ~ "' "
        ~ "or expires_at is null or expires_at < current_timestamp())") -%}
    {%- set state = _lakehouse_lock_state(table, lock_name) -%}
    {%- if state is none or state.holder != holder -%}
        {%- do _lakehouse_lock_busy(table, state) -%}
    {%- endif -%}
    {%- do log('lakehouse lock: ' ~ lock_name ~ ' taken by ' ~ holder ~ ' (' ~ purpose ~ ') until ' ~ state.expires_at ~ ' UTC', info=true) -%}
    {{ return('') }}
{% endmacro %}
