{#-
    The query of a data test, as dbt's test materialization runs it (dbt
    dispatches `get_test_sql` here on Spark). When the test passed before on
    exactly the tables it reads now, its pass is reused: the query is a
    constant row (0 failures, no Spark job) instead of a scan. Every
    other test runs as dbt runs it. See `_test_pass_key` for what must be
    unchanged and `record_test_passes` for when a pass is recorded; off with
    `--vars '{reuse_test_passes: false}'`.
-#}
{% macro spark__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) %}
    {%- set key = _test_pass_key([main_sql, config.get('sql_header'), fail_calc, warn_if, error_if, limit,
                                  config.get('severity')] | join('|')) -%}
    {%- set state = _test_pass_state() -%}
    {%- if key is not none and state['passed'].get(model.unique_id) == key -%}
        {%- do state['reused'].append(model.unique_id) -%}
        {%- do log(model.name ~ ': pass reused, the tables it reads unchanged since it passed', info=false) %}
    /* {{ model.name }}: pass reused, the tables it reads unchanged since it passed */
    select 0 as failures, false as should_warn, false as should_error
    {%- else -%}
        {%- if key is not none -%}{%- do state['pending'].update({model.unique_id: key}) -%}{%- endif %}
    {{ default__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) }}
    {%- endif -%}
{% endmacro %}
