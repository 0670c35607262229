{#-
    What a unit test's pass depends on, as one digest, or none when its pass
    must not be reused (then it always runs). A unit test reads no table:
    dbt puts its given rows in place of every `ref`, `source` and `this`,
    typed as the real relations are (the describes dbt makes while it
    compiles the test), so its outcome follows from
    - its compiled SQL (the model's SQL with its macros and vars expanded,
      the given rows and their types);
    - its expected rows or SQL, and its SQL header;
    - the engine: Spark's version and the session's time zone, which the
      stored key carries too (`_unit_test_engine_key`, computed by Spark).
    None when the compiled SQL names a relation of the project's schemas
    (`<target schema>_...`: a table read by its name, not through `ref`),
    calls a function whose value changes by itself
    (`_calls_changing_function`), the test has `meta: {reuse_pass: false}`
    (a Python UDF, a table of another schema read by name), or the var
    `reuse_test_passes` is false. `node`: the unit test's node (the
    materialization's `model`, or a result's node in on-run-end).
-#}
{% macro _unit_test_pass_key(node) %}
    {#- (`node` is a dict in a materialization, an object in on-run-end:
        `get` reads both alike, an absent field as none) -#}
    {%- set config, sql = node.config, node.compiled_code or '' -%}
    {%- set expected = tojson(config.get('expected_rows'), sort_keys=true) -%}
    {%- if not var('reuse_test_passes', true) or (config.get('meta') or {}).get('reuse_pass', true) == false
           or expected is none or _calls_changing_function(sql)
           or modules.re.search('(?i)\\b' ~ modules.re.escape(target.schema) ~ '_\\w+\\s*\\.', sql) -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(local_md5(['unit', sql, expected, config.get('expected_sql') or '', config.get('sql_header') or '']
                        | join('|'))) }}
{% endmacro %}

{#- The key a unit test's pass is stored under: its digest (`digest_sql`, a
    SQL expression) with the engine it passed on, as Spark itself names it. -#}
{% macro _unit_test_engine_key(digest_sql) -%}
    concat({{ digest_sql }}, '@spark ', version(), ' ', current_timezone())
{%- endmacro %}

{#- When this unit test (`model`) passed under `key` on this engine: the
    rows a passing test's query returns (none: the actual and the expected
    rows compare equal), read with the one query that looks the pass up.
    None when it has no such pass. -#}
{% macro _unit_test_stored_pass(key) %}
    {%- set stored = adapter.get_relation(database=none, schema=lakehouse_ops_schema(), identifier='test_passes') -%}
    {%- if stored is none -%}{{ return(none) }}{%- endif -%}
    {%- set found = run_query('select cast(null as string) as actual_or_expected from ' ~ stored
                              ~ ' where test_id = ' ~ sql_string(model.unique_id)
                              ~ ' and pass_key = ' ~ _unit_test_engine_key(sql_string(key))) -%}
    {{ return(found.limit(0) if found.rows | length > 0 else none) }}
{% endmacro %}
