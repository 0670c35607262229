{#- How a key column's value is written back into SQL as a literal that
    finds it again (the key lists of _cdc_batch_keys and replace_by_key_sql):
    `literal`, a SQL expression of the value's literal text, none for a type
    whose text does not convert back to the same value (only integers,
    decimals, strings, dates and timestamps do here); `unusable`, a
    condition true for a value no literal finds: NULL (`in` never matches
    it) and text that is not UTF-8 (a file's string bounds are compared
    decoded, with replacement). `column`: the column as SQL, quoted. -#}
{% macro _cdc_key_literal(column, data_type) %}
    {%- set data_type = (data_type or '') | lower -%}
    {%- set unusable = [column ~ ' is null'] -%}
    {%- set literal = none -%}
    {%- if data_type == 'string' -%}
        {#- hex: no quote or backslash in the key can break the literal -#}
        {%- set literal = "concat('cast(X', chr(39), hex(" ~ column ~ "), chr(39), ' as string)')" -%}
        {%- do unusable.append('cast(decode(cast(' ~ column ~ " as binary), 'UTF-8') as binary) <> cast("
                               ~ column ~ ' as binary)') -%}
    {%- elif data_type in ('tinyint', 'smallint', 'int', 'integer', 'bigint') -%}
        {#- an integer literal of the column's type (suffix), the cheapest to plan -#}
        {%- set suffix = {'tinyint': 'Y', 'smallint': 'S', 'bigint': 'L'}.get(data_type, '') -%}
        {%- set literal = "concat(cast(" ~ column ~ " as string), '" ~ suffix ~ "')" -%}
    {%- elif data_type == 'timestamp' -%}
        {#- microseconds since the epoch: exact whatever the session time zone -#}
        {%- set literal = "concat('timestamp_micros(', unix_micros(" ~ column ~ "), 'L)')" -%}
    {%- elif data_type == 'date' or decimal_scale(data_type) is not none -%}
        {%- set literal = "concat('cast(', chr(39), cast(" ~ column ~ " as string), chr(39), ' as "
                          ~ data_type ~ ")')" -%}
    {%- endif -%}
    {{ return({'literal': literal, 'unusable': unusable | join(' or ')}) }}
{% endmacro %}
