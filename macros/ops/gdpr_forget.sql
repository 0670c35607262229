{#
    Post-hook (dbt_project.yml, every model and snapshot): if the model
    declares `meta.gdpr_subject` and the erasure ledger holds subjects, delete
    their rows from the model's table (and its CDC tombstones and quarantine
    rows), count them in <ops>.erasure_events and log them. A change for an
    erased subject arriving after the erasure is applied by the CDC merge and
    removed here, in the same run, before any downstream model reads it.
    Renders no SQL: the work is done through run_query.
#}
{% macro gdpr_forget(relation) %}
    {%- if not execute or relation is none -%}{{ return('') }}{%- endif -%}
    {%- set mapping = (model.config.meta or {}).get('gdpr_subject') -%}
    {%- if not mapping or model.config.materialized in ('view', 'ephemeral') -%}{{ return('') }}{%- endif -%}
    {%- set ledger = _gdpr_ledger() -%}
    {%- if ledger is none -%}{{ return('') }}{%- endif -%}
    {%- set result = _gdpr_forget_relation(ledger, relation, mapping, model.name, invocation_id, 'post-hook') -%}
    {%- if result['propagated'] > 0 -%}
        {#- new keys (e.g. a new order of an erased customer): models built
            earlier in this run may hold rows under them -#}
        {%- do gdpr_forget_all(invocation_id, 'post-hook') -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
