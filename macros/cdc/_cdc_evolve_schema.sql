{#
    Schema evolution without a full refresh: columns new in the batch are
    added to the table; a column whose type widened (int -> bigint,
    float -> double, larger decimal precision) is widened. Columns the batch
    no longer has are kept (set null from now on, see _cdc_merge_sql).
    A column whose new type the table's type does not hold exactly, and
    that Iceberg cannot widen in place (e.g. decimal(10,2) declared as
    decimal(12,4) now: the MERGE would round), fails the run before
    anything is changed, naming the column and the fix. Returns the table's
    columns after the change, so that the run does not describe the table
    again: {'names': in order, added columns last; 'types': lower-case
    name -> type}.
    `along`: tables that hold some of the columns (`along_columns`: the
    tombstones and the horizon hold the keys and the sequence); when one of
    those columns widens, they are evolved to them first, so that a run
    stopped between the two finds the table still to widen and does both.
#}
{% macro _cdc_evolve_schema(target, data_columns, along=[], along_columns=[]) %}
    {%- set existing = {} -%}
    {%- set names = [] -%}
    {%- for column in adapter.get_columns_in_relation(target) -%}
        {%- do existing.update({column.name | lower: column.data_type | lower | replace(' ', '')}) -%}
        {%- do names.append(column.name) -%}
    {%- endfor -%}
    {%- set types = dict(existing) -%}
    {%- set changes = [] -%}
    {%- set widened = [] -%}
    {%- for column in data_columns -%}
        {%- set name = column.name | lower -%}
        {%- set wanted = column.data_type | lower | replace(' ', '') -%}
        {%- if name not in existing -%}
            {%- do changes.append(('adding column ', 'add columns (`' ~ column.name ~ '` ' ~ wanted ~ ')', column.name ~ ' ' ~ wanted)) -%}
            {%- do names.append(column.name) -%}
            {%- do types.update({name: wanted}) -%}
        {%- elif existing[name] != wanted and _cdc_is_widening(existing[name], wanted) -%}
            {%- do changes.append(('widening ', 'alter column `' ~ column.name ~ '` type ' ~ wanted,
                                   column.name ~ ' ' ~ existing[name] ~ ' -> ' ~ wanted)) -%}
            {%- do types.update({name: wanted}) -%}
            {%- do widened.append(name) -%}
        {%- elif existing[name] != wanted and not _cdc_holds_exactly(existing[name], wanted) -%}
            {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': column " ~ column.name ~ " is "
                ~ existing[name] ~ " in " ~ target ~ " and " ~ wanted ~ " in the model now (its source YAML or SQL). "
                ~ "Storing it would change values (round or cut them), and Iceberg widens a column in place only "
                ~ "from int to bigint, float to double, or a decimal to more precision at the same scale. Nothing was "
                ~ "applied. Declare the column as before, or rebuild the table with dbt build --full-refresh --select "
                ~ model.name ~ " (it re-reads every landed file).") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if widened | select('in', along_columns | map(attribute='name') | map('lower') | list) | list -%}
        {%- for relation in along -%}
            {%- do _cdc_evolve_schema(relation, along_columns) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- for what, statement, detail in changes -%}
        {%- do log('cdc ' ~ model.name ~ ': ' ~ what ~ detail, info=true) -%}
        {%- do run_query('alter table ' ~ target ~ ' ' ~ statement) -%}
    {%- endfor -%}
    {{ return({'names': names, 'types': types}) }}
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

{#- True when a column of type `stored` holds every value of type `wanted`
    exactly (Iceberg stores tinyint and smallint as int, char as string) -#}
{% macro _cdc_holds_exactly(stored, wanted) %}
    {%- set integers = {'tinyint': 3, 'smallint': 5, 'int': 10, 'bigint': 19} -%}
    {%- set stored_dec = modules.re.match('^decimal\\((\\d+),(\\d+)\\)$', stored) -%}
    {%- set wanted_dec = modules.re.match('^decimal\\((\\d+),(\\d+)\\)$', wanted) -%}
    {%- set digits = integers.get(wanted, wanted_dec.group(1) | int - wanted_dec.group(2) | int if wanted_dec else none) -%}
    {%- if wanted == 'void' or stored == 'string' -%}
        {{ return(true) }}
    {%- elif stored in integers and wanted in integers -%}
        {{ return(integers[stored] >= integers[wanted]) }}
    {%- elif stored_dec and digits is not none -%}
        {#- as many integer digits, and as many fractional ones -#}
        {{ return(stored_dec.group(1) | int - stored_dec.group(2) | int >= digits
                  and stored_dec.group(2) | int >= (wanted_dec.group(2) | int if wanted_dec else 0)) }}
    {%- elif stored == 'double' -%}
        {{ return(wanted in ('float', 'tinyint', 'smallint', 'int')) }}
    {%- elif stored == 'float' -%}
        {{ return(wanted in ('tinyint', 'smallint')) }}
    {%- elif stored in ('timestamp', 'timestamp_ntz') -%}
        {{ return(wanted == 'date') }}
    {%- endif -%}
    {{ return(false) }}
{% endmacro %}

{#
    Fails the run, before anything is written, when a column the batch's
    files carry and the YAML does not declare has the name of a column the
    model selects (one it computes or renames): adding it is impossible and
    its values from the files would be lost without a word. `counts`: the
    batch's (_cdc_batch_counts: the columns of the rows applied and of the
    rows a change log keeps).
#}
{% macro _cdc_check_undeclared_columns(run, counts) %}
    {%- set selected = run['data_columns'] | map(attribute='name') | map('lower') | list -%}
    {%- set shadowed = [] -%}
    {%- for name in ((counts['undeclared'] or '') ~ ',' ~ (counts['kept_undeclared'] or '')).split(',')
        if name and name | lower in selected and name | lower not in shadowed -%}
        {%- do shadowed.append(name | lower) -%}
    {%- endfor -%}
    {%- if shadowed -%}
        {%- do _cdc_scratch_drop(run['schema'], run['batch']) -%}
        {%- do exceptions.raise_compiler_error(
            "model '" ~ model.name ~ "': the files carry column(s) " ~ shadowed | join(', ')
            ~ " that the source YAML does not declare, and the model has a column of the same name (it computes "
            ~ "or renames one), so the files' values would be lost. Nothing was applied. Declare the column(s) in "
            ~ "the source YAML with their type and give the model's own column another name.") -%}
    {%- endif -%}
{% endmacro %}

{#
    Columns the batch's files have and the YAML does not declare (bronze's
    `_cdc_extra`, names already checked to be plain identifiers): each one
    the table lacks is added as a string column, and every string column of
    the table that the model does not select is filled from `_cdc_extra`
    by the merge (so a column keeps arriving after it was added). Returns
    {'added': [names added now], 'columns': [names filled from _cdc_extra]}.
    `types`: the table's columns (lower-case name -> type) when the run
    knows them (_cdc_evolve_schema), or none: the table is described.
#}
{% macro _cdc_add_undeclared_columns(target, data_columns, undeclared, types=none) %}
    {%- set selected = data_columns | map(attribute='name') | map('lower') | list -%}
    {%- set generated = cdc_column_names('generated') -%}
    {%- set filled = [] -%}
    {%- set added = [] -%}
    {%- set existing = {} if types is none else types -%}
    {%- if types is none -%}
        {%- for column in adapter.get_columns_in_relation(target) -%}
            {%- do existing.update({column.name | lower: column.data_type | lower | replace(' ', '')}) -%}
        {%- endfor -%}
    {%- endif -%}
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
