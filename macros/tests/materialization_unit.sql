{#-
    dbt's unit test materialization on Spark, with pass reuse. A unit test
    that passed before with the same compiled SQL, expected rows and engine
    (`_unit_test_pass_key`) is not run: one query finds its pass, and its
    result is reported as a pass (`_reuse_pass`). Every other unit test runs
    as dbt's default materialization runs it (a temporary view, a describe,
    the comparison query, a drop); `record_test_passes` records its pass.
    `--vars '{reuse_test_passes: false}'` runs every test.
-#}
{% materialization unit, adapter='spark' %}
    {%- set key = _unit_test_pass_key(model) -%}
    {%- set passed = _unit_test_stored_pass(key) if key is not none else none -%}
    {%- if passed is not none -%}
        {%- do _reuse_pass(passed) -%}
        {{ return({'relations': []}) }}
    {%- endif -%}
    {{ return(dbt.materialization_unit_default()) }}
{% endmaterialization %}
