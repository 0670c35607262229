{#- The erasure ledger tables if an erasure was ever recorded and is still in
    force, else none. Fails when the ledger was written with another pepper
    (LAKEHOUSE_ERASURE_PEPPER): its hashes would then match nothing and
    erased subjects would come back silently. -#}
{% macro _gdpr_ledger() %}
    {%- set schema = lakehouse_ops_schema() -%}
    {%- set ledger = adapter.get_relation(database=none, schema=schema, identifier='erasure_ledger') -%}
    {%- if ledger is none -%}{{ return(none) }}{%- endif -%}
    {%- set row = run_query("select count(*), count_if(pepper_id <> substr(sha2('"
                            ~ env_var('LAKEHOUSE_ERASURE_PEPPER', '') ~ "', 256), 1, 12)) from "
                            ~ ledger ~ " where status <> 'readmitted'").rows[0] -%}
    {%- if row[0] == 0 -%}{{ return(none) }}{%- endif -%}
    {%- if row[1] > 0 -%}
        {%- do exceptions.raise_compiler_error(
            row[1] ~ " erasure(s) in " ~ ledger ~ " were recorded with another LAKEHOUSE_ERASURE_PEPPER: "
            ~ "set the pepper they were made with, or erased subjects would come back unnoticed.") -%}
    {%- endif -%}
    {{ return({'ledger': schema ~ '.erasure_ledger', 'keys': schema ~ '.erasure_keys',
               'events': schema ~ '.erasure_events'}) }}
{% endmacro %}
