{#- The schema of the operations tables (maintenance audit, erasure ledger):
    <target schema>_ops. -#}
{% macro lakehouse_ops_schema() -%}
    {{ return(target.schema ~ '_ops') }}
{%- endmacro %}
