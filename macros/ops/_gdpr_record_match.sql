{#- Whether a quarantined `record` holds one of `hashes` (an SQL expression
    giving an array of key hashes) as a value of `key`, compared whole, never
    as part of a longer value (42 is not found in 142 or 4242):
      - a JSON record (DMS Parquet or bad values, Debezium lines): the values
        of the field named `column`, at any depth (Debezium's before/after);
      - any other record is a raw CSV line: every field, since a malformed
        line cannot say which field is which (a rejected line holding the
        value in another column is taken for the subject's: erasure errs on
        the side of removing).
    Integer values are compared as Spark renders integers (no sign, no zero
    padding), the rule of _gdpr_key_hash and lakehouse_cdc/erase.py. -#}
{% macro _gdpr_record_match(key, column, hashes, record='record') -%}
    arrays_overlap(
        transform(
            case
                when left(ltrim({{ record }}), 1) in ('{', '[')
                    then regexp_extract_all({{ record }}, '"{{ column }}"\\s*:\\s*"?([^",}\\]]*)', 1)
                else transform(split({{ record }}, ','), f -> trim(both '"' from trim(f)))
            end,
            v -> {{ _gdpr_key_hash(key, "case when trim(v) rlike '^[+-]?[0-9]+$' "
                                       ~ "then cast(cast(trim(v) as decimal(38, 0)) as string) else trim(v) end") }}
        ),
        {{ hashes }}
    )
{%- endmacro %}
