{#-
    This invocation's data test passes (dbt keeps no state between nodes:
    the one object all nodes of an invocation share is the manifest's
    `graph`, so the state hangs there under `lakehouse_test_passes`, for
    this invocation only). `passed`: {test id: key} as recorded in
    <ops>.test_passes, read once; `pending`: the keys of tests run now,
    recorded at the end if they pass; `reused`: the tests whose pass was
    reused; `tables`: each parent table's state, read once per invocation
    (`_test_table_state`; forgotten by `test_pass_tables_changed`).
-#}
{% macro _test_pass_state() %}
    {%- set state = graph.get('lakehouse_test_passes') -%}
    {%- if state is not none and state['invocation'] == invocation_id -%}{{ return(state) }}{%- endif -%}
    {%- set state = {'invocation': invocation_id, 'passed': {}, 'pending': {}, 'reused': [], 'tables': {}} -%}
    {%- set stored = adapter.get_relation(database=none, schema=lakehouse_ops_schema(), identifier='test_passes')
                     if execute and var('reuse_test_passes', true) else none -%}
    {%- if stored is not none -%}
        {%- for row in run_query('select test_id, pass_key from ' ~ stored) -%}
            {%- do state['passed'].update({row[0]: row[1]}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- do graph.update({'lakehouse_test_passes': state}) -%}
    {{ return(state) }}
{% endmacro %}

{#- A macro that changes a model's table outside that model's own node (the
    erasure sweep) calls this: the tables' states read earlier in the
    invocation no longer hold. -#}
{% macro test_pass_tables_changed() %}
    {%- set state = graph.get('lakehouse_test_passes') -%}
    {%- if state is not none -%}{%- do state['tables'].clear() -%}{%- endif -%}
{% endmacro %}
