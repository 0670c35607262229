{#- A reused pass as the test's result: dbt's `noop_statement` stores `res`
    (the rows a passing test returns) as the test's 'main' result with the
    message 'pass reused', and writes a comment saying so as the test's SQL
    under target/run; the log names the test. Called by both test
    materializations (data and unit). -#}
{% macro _reuse_pass(res) %}
    {%- do log(model.name ~ ': pass reused, nothing it depends on changed since it passed', info=false) -%}
    {%- call noop_statement('main', message='pass reused', code='OK', rows_affected=0, res=res) -%}
        /* {{ model.name }}: pass reused, nothing it depends on changed since it passed; not run */
    {%- endcall -%}
{% endmacro %}

{#- Whether one of on-run-end's `results` is a pass `_reuse_pass` reported. -#}
{% macro _pass_was_reused(result) %}
    {{ return((result.adapter_response or {}).get('_message') == 'pass reused') }}
{% endmacro %}
