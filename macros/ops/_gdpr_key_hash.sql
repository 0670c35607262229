{#- The ledger's hash of one key value: sha256(pepper || key_name || '=' || value).
    lakehouse_cdc/erase.py `key_hash` is the same rule for values read from files. -#}
{% macro _gdpr_key_hash(key_name, expression) -%}
    sha2(concat('{{ env_var('LAKEHOUSE_ERASURE_PEPPER', '') }}', '{{ key_name }}=', cast({{ expression }} as string)), 256)
{%- endmacro %}
