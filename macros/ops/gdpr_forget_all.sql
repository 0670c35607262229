{#
    Apply the erasure ledger to every table of a model or snapshot that
    declares `meta.gdpr_subject`: first the tables that map more than one key
    (they carry the foreign keys, e.g. orders: customer_id -> order_id), so
    that the keys they lead to are in the ledger before the other tables are
    cleaned. Used by `lakehouse erase` (run-operation) and by gdpr_forget.
    Returns the rows removed per table.
#}
{% macro gdpr_forget_all(run_id=none, origin='erase') %}
    {%- set removed = {} -%}
    {%- if not execute -%}{{ return(removed) }}{%- endif -%}
    {%- set ledger = _gdpr_ledger() -%}
    {%- if ledger is none -%}{{ return(removed) }}{%- endif -%}
    {%- set first = [] -%}
    {%- set then = [] -%}
    {%- for node in graph.nodes.values()
            if node.resource_type in ('model', 'snapshot') and node.package_name == project_name
            and (node.config.meta or {}).get('gdpr_subject')
            and node.config.materialized not in ('view', 'ephemeral') -%}
        {%- do (first if (node.config.meta.gdpr_subject | length) > 1 else then).append(node) -%}
    {%- endfor -%}
    {%- for node in first + then -%}
        {%- set relation = adapter.get_relation(database=none, schema=node.schema, identifier=node.alias) -%}
        {%- if relation is not none -%}
            {%- set result = _gdpr_forget_relation(ledger, relation, node.config.meta.gdpr_subject, node.name,
                                                   run_id or invocation_id, origin) -%}
            {%- do removed.update(result['removed']) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if origin == 'erase' -%}
        {%- do log('gdpr erase: ' ~ removed | tojson, info=true) -%}
    {%- endif -%}
    {{ return(removed) }}
{% endmacro %}
