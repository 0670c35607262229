{#
    Release the build lock taken by this invocation (on-run-end hook; also
    called by table maintenance after its work). Releasing a lock held by
    another invocation does nothing unless force=true, the way to clear the
    lock of a build that was killed:
        dbt run-operation lakehouse_lock_release --args '{force: true}'
    Under the var `lakehouse_lock_holder` (a job of several dbt invocations
    holds the lock, e.g. `lakehouse erase`) the hook does nothing: the lock
    stays with the job, which releases it at its end with
    `--args '{holder: <its holder>}'`.
#}
{% macro lakehouse_lock_release(lock_name='build', force=false, holder=none) %}
    {%- if not execute or not (force or _lakehouse_lock_enabled()) -%}{{ return('') }}{%- endif -%}
    {%- if not force and holder is none and var('lakehouse_lock_holder', none) -%}{{ return('') }}{%- endif -%}
    {%- set table = _lakehouse_lock_table(lock_name) -%}
    {%- set mine = "" if force else " and holder = '" ~ (holder or invocation_id) ~ "'" -%}
    {%- do run_query(
        "update " ~ table ~ " set holder = null, purpose = null, held_by = null, "
        ~ "acquired_at = null, expires_at = null where lock_name = '" ~ lock_name ~ "' "
        ~ "and holder is not null" ~ mine) -%}
    {%- if force -%}{%- do log('lakehouse lock: ' ~ lock_name ~ ' released (forced)', info=true) -%}{%- endif -%}
    {{ return('') }}
{% endmacro %}
