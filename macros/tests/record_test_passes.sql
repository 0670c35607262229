{#-
    on-run-end: record the data tests that ran and passed, each with the
    key it ran under (`_test_pass_key`), in <ops>.test_passes: one MERGE,
    only when a test ran and passed (a build whose passes were all reused
    writes nothing). A failing, warning or erroring test keeps its older
    record, whose key no longer matches anything that changed since, so it
    runs again until it passes. Logs how many passes were reused.
    `results`: dbt's results of this invocation. Placed after the lock's
    release in dbt_project.yml: a failure here must not leave it held.
-#}
{% macro record_test_passes(results) %}
    {%- set state = graph.pop('lakehouse_test_passes_' ~ invocation_id, none) if execute else none -%}
    {%- if state is none -%}{{ return('') }}{%- endif -%}
    {%- set rows = [] -%}
    {%- for result in results
            if result.node.resource_type == 'test' and result.node.unique_id in state['pending']
            and result.status == 'pass' -%}
        {%- do rows.append('(' ~ sql_string(result.node.unique_id) ~ ', '
                           ~ sql_string(state['pending'][result.node.unique_id]) ~ ')') -%}
    {%- endfor -%}
    {%- if rows -%}
        {%- set table = lakehouse_ops_schema() ~ '.test_passes' -%}
        {%- do run_query('create database if not exists ' ~ lakehouse_ops_schema()) -%}
        {%- do run_query('create table if not exists ' ~ table ~ ' (test_id string, pass_key string, '
                         ~ 'run_id string, passed_at timestamp) using iceberg') -%}
        {%- do run_query('merge into ' ~ table ~ ' as t using (select test_id, pass_key, ' ~ sql_string(invocation_id)
                         ~ ' as run_id, current_timestamp() as passed_at from values ' ~ rows | join(', ')
                         ~ ' as v(test_id, pass_key)) as s on t.test_id = s.test_id'
                         ~ ' when matched then update set * when not matched then insert *') -%}
    {%- endif -%}
    {%- if state['reused'] -%}
        {%- do log(state['reused'] | length ~ ' data test(s) reused their pass: the tables they read are as when '
                   ~ "they passed (`--vars '{reuse_test_passes: false}'` runs them all)", info=true) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
