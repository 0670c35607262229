{#-
    on-run-end: record the tests that ran and passed in <ops>.test_passes,
    each under the key it ran with: a data test's (`_test_pass_key`, kept
    pending by its materialization), a unit test's (`_unit_test_pass_key`
    of its node, bound to the engine by Spark: `_unit_test_engine_key`).
    One MERGE, only when a test ran and passed (a build whose passes were
    all reused writes nothing). A failing, warning or erroring test keeps
    its older record, whose key no longer matches anything that changed
    since, so it runs again until it passes. Logs how many passes were
    reused. `results`: dbt's results of this invocation. Placed after the
    lock's release in dbt_project.yml: a failure here must not leave it held.
-#}
{% macro record_test_passes(results) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set state = graph.pop('lakehouse_test_passes_' ~ invocation_id, none) -%}
    {%- set pending = state['pending'] if state is not none else {} -%}
    {%- set rows, reused = [], [] -%}
    {%- for result in results if result.status == 'pass' -%}
        {%- set node = result.node -%}
        {%- set key = pending.get(node.unique_id) if node.resource_type == 'test'
                      else _unit_test_pass_key(node) if node.resource_type == 'unit_test' else none -%}
        {%- if _pass_was_reused(result) -%}
            {%- do reused.append(node.unique_id) -%}
        {%- elif key is not none -%}
            {%- do rows.append('(' ~ sql_string(node.unique_id) ~ ', ' ~ sql_string(key) ~ ', '
                               ~ (node.resource_type == 'unit_test') ~ ')') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if rows -%}
        {%- set table = lakehouse_ops_schema() ~ '.test_passes' -%}
        {%- do run_query('create database if not exists ' ~ lakehouse_ops_schema()) -%}
        {%- do run_query('create table if not exists ' ~ table ~ ' (test_id string, pass_key string, '
                         ~ 'run_id string, passed_at timestamp) using iceberg') -%}
        {%- do run_query('merge into ' ~ table ~ ' as t using (select test_id, if(unit, '
                         ~ _unit_test_engine_key('pass_key') ~ ', pass_key) as pass_key, '
                         ~ sql_string(invocation_id) ~ ' as run_id, current_timestamp() as passed_at from values '
                         ~ rows | join(', ') ~ ' as v(test_id, pass_key, unit)) as s on t.test_id = s.test_id'
                         ~ ' when matched then update set * when not matched then insert *') -%}
    {%- endif -%}
    {%- if reused -%}
        {%- do log(reused | length ~ ' test(s) reused their pass: nothing they depend on changed since they '
                   ~ "passed (`--vars '{reuse_test_passes: false}'` runs them all)", info=true) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
