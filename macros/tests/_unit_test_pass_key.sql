{#-
    What a unit test's pass depends on, as one digest, or none when its pass
    must not be reused (then it always runs). A unit test reads no table:
    dbt puts its given rows in place of every `ref`, `source` and `this`,
    typed as the real relations are (the describes dbt makes while it
    compiles the test). The key holds
    - its compiled SQL (the model's SQL with its macros and vars expanded,
      the given rows and their types);
    - its expected rows or SQL, and its SQL header;
    - dbt's version (dbt's own macros build the expected rows' SQL and
      compare the rows) and the target's name;
    - the engine: Spark's version and the session's time zone, which the
      stored key carries too (`_unit_test_engine_key`, computed by Spark).
    Not in it: Spark settings other than the time zone (an edit of the
    profile's keeps the target's name), and what a Python UDF does.
    None when the compiled SQL names a relation of the project's schemas
    (`<target schema>` or `<target schema>_...`, quoted or not: a table read
    by its name, not through `ref`), calls a function whose value changes by
    itself (`_calls_changing_function`), the var `reuse_test_passes` is
    false, or the unit test sets it false in its `overrides: {vars: ...}`
    (dbt gives the node it runs no `meta`: that is the per-test switch, for
    a test that calls a Python UDF or reads another catalog's table by name).
    `node`: the unit test's node (the materialization's `model`, a dict, or
    a result's node in on-run-end, an object: the fields read here read
    alike in both, an absent one as none).
-#}
{% macro _unit_test_pass_key(node) %}
    {%- set config, sql = node.config, node.compiled_code or '' -%}
    {%- set overrides = (node.overrides.vars if node.overrides else none) or {} -%}
    {%- if not var('reuse_test_passes', true) or overrides.get('reuse_test_passes', true) == false
           or _calls_changing_function(sql)
           or modules.re.search('(?i)(?<![\\w.])`?' ~ modules.re.escape(target.schema) ~ '(_\\w+)?`?\\s*\\.', sql) -%}
        {{ return(none) }}
    {%- endif -%}
    {#- (the expected rows as Python writes them: YAML may give dates, which JSON cannot hold) -#}
    {{ return(local_md5(['unit', dbt_version, target.name, sql, config.get('expected_rows') | string,
                         config.get('expected_sql') or '', config.get('sql_header') or ''] | join('|'))) }}
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
