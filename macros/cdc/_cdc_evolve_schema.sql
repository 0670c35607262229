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

{#
    Columns the batch's files have and the YAML does not declare (bronze's
    `_cdc_extra`, names already checked to be plain identifiers): each one
    the table lacks is added as a string column, and every string column of
    the table that the model does not select is filled from `_cdc_extra`
    by the merge (so a column keeps arriving after it was added). Returns
    {'added': [names added now], 'columns': [names filled from _cdc_extra]}.
#}
{% macro _cdc_add_undeclared_columns(target, data_columns, undeclared) %}
    {%- set selected = data_columns | map(attribute='name') | map('lower') | list -%}
    {%- set generated = cdc_column_names('generated') -%}
    {%- set filled = [] -%}
    {%- set added = [] -%}
    {%- set existing = {} -%}
    {%- for column in adapter.get_columns_in_relation(target) -%}
        {%- do existing.update({column.name | lower: column.data_type | lower}) -%}
    {%- endfor -%}
    {%- for name in existing if name not in selected and name not in generated and existing[name] == 'string' -%}
        {%- do filled.append(name) -%}
    {%- endfor -%}
    {%- for name in undeclared or [] if name not in selected and name not in existing -%}
        {%- do log('cdc ' ~ model.name ~ ': adding column ' ~ name ~ ' string (in the files, not declared in the '
                   ~ 'source YAML: declare it there, with its type)', info=true) -%}
        {%- do run_query('alter table ' ~ target ~ ' add columns (`' ~ name ~ '` string)') -%}
        {%- do added.append(name) -%}
        {%- do filled.append(name) -%}
    {%- endfor -%}
    {{ return({'added': added, 'columns': filled}) }}
{% endmacro %}
