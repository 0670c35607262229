{#
    Schema evolution without a full refresh: columns new in the batch are
    added to the table; a column whose type widened (int -> bigint,
    float -> double, larger decimal precision) is widened. Columns the batch
    no longer has are kept (set null from now on, see _cdc_merge_sql).
#}
{% macro _cdc_evolve_schema(target, data_columns) %}
    {%- set existing = {} -%}
    {%- for column in adapter.get_columns_in_relation(target) -%}
        {%- do existing.update({column.name | lower: column.data_type | lower}) -%}
    {%- endfor -%}
    {%- for column in data_columns -%}
        {%- set name = column.name | lower -%}
        {%- set wanted = column.data_type | lower -%}
        {%- if name not in existing -%}
            {%- do log('cdc ' ~ model.name ~ ': adding column ' ~ column.name ~ ' ' ~ wanted, info=true) -%}
            {%- do run_query('alter table ' ~ target ~ ' add columns (`' ~ column.name ~ '` ' ~ wanted ~ ')') -%}
        {%- elif existing[name] != wanted and _cdc_is_widening(existing[name], wanted) -%}
            {%- do log('cdc ' ~ model.name ~ ': widening ' ~ column.name ~ ' ' ~ existing[name] ~ ' -> ' ~ wanted, info=true) -%}
            {%- do run_query('alter table ' ~ target ~ ' alter column `' ~ column.name ~ '` type ' ~ wanted) -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{% macro _cdc_is_widening(old, new) %}
    {%- if (old, new) in [('int', 'bigint'), ('integer', 'bigint'), ('float', 'double')] -%}
        {{ return(true) }}
    {%- endif -%}
    {%- set old_dec = modules.re.match('decimal\\((\\d+),\\s*(\\d+)\\)', old) -%}
    {%- set new_dec = modules.re.match('decimal\\((\\d+),\\s*(\\d+)\\)', new) -%}
    {%- if old_dec and new_dec -%}
        {{ return(new_dec.group(2) == old_dec.group(2) and new_dec.group(1) | int > old_dec.group(1) | int) }}
    {%- endif -%}
    {{ return(false) }}
{% endmacro %}
