{#-
    This invocation's data test passes (dbt keeps no state between nodes:
    the one object all nodes of an invocation share is the manifest's
    `graph`, so the state hangs there under a key naming the invocation;
    `setdefault` makes the first thread's state everyone's when several
    threads start at once). `passed`: {test id: key} as recorded in
    <ops>.test_passes, read once; `pending`: the keys of tests run now,
    recorded at the end if they pass; `engine`: as `_test_engine` reads it.
-#}
{% macro _test_pass_state() %}
    {%- set state = graph.setdefault('lakehouse_test_passes_' ~ invocation_id,
                                     {'passed': none, 'pending': {}, 'engine': none}) -%}
    {%- if state['passed'] is none -%}
        {%- set passed = {} -%}
        {%- set stored = adapter.get_relation(database=none, schema=lakehouse_ops_schema(), identifier='test_passes')
                         if execute and var('reuse_test_passes', true) else none -%}
        {%- if stored is not none -%}
            {%- for row in run_query('select test_id, pass_key from ' ~ stored) -%}
                {%- do passed.update({row[0]: row[1]}) -%}
            {%- endfor -%}
        {%- endif -%}
        {%- do state.update({'passed': passed}) -%}
    {%- endif -%}
    {{ return(state) }}
{% endmacro %}
