{#- Set on `relation`, a table made before, the properties of `wanted`
    (name -> value) that it lacks or holds with another value, in one
    `alter table` (none when it holds them all): a setting changed in
    dbt_project.yml or a model's config reaches the tables made before it,
    for the files written from then on. Values are compared and set as
    Spark prints them (_table_property_text).

    First from the listing dbt cached when the invocation began (`show
    table extended`: the catalog's table parameters, no statement), which
    lacks `format-version` (Iceberg keeps it in the table's metadata only,
    so a format 1 table holding every other wanted value is left as it
    is); when the listing shows another value or none (a table made or
    altered in this invocation), from `show tblproperties` (Iceberg's own
    view, format version included; no Spark job). On a shared catalog
    another build may alter the table after dbt listed it: this run then
    leaves it, and the next one sets it back. -#}
{% macro table_properties_apply(relation, wanted) %}
    {%- set values = {} -%}
    {%- for name, value in (wanted or {}).items() -%}
        {%- do values.update({name: _table_property_text(value)}) -%}
    {%- endfor -%}
    {%- if not values -%}{{ return(none) }}{%- endif -%}
    {%- set cached = adapter.get_relation(database=relation.database, schema=relation.schema,
                                          identifier=relation.identifier) -%}
    {%- set text = cached.information if cached is not none and cached.information else '' -%}
    {%- set listed = modules.re.search('(?m)^Table Properties: \\[(.*)\\]$', text) -%}
    {%- if listed -%}
        {%- set differ = [] -%}
        {%- for name, value in values.items() if name != 'format-version' -%}
            {%- set held = modules.re.search('(?:^|, )' ~ modules.re.escape(name) ~ '=([^,]*)(?:, |$)',
                                             listed.group(1)) -%}
            {%- if not held or held.group(1) != value -%}
                {%- do differ.append(name) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if not differ -%}{{ return(none) }}{%- endif -%}
    {%- endif -%}
    {%- set properties = table_properties(relation) -%}
    {%- set changes = [] -%}
    {%- for name, value in values.items() if properties.get(name) != value -%}
        {%- do changes.append(sql_string(name) ~ ' = ' ~ sql_string(value)) -%}
    {%- endfor -%}
    {%- if changes -%}
        {%- do log(relation ~ ': set tblproperties ' ~ changes | join(', '), info=true) -%}
        {%- do run_query('alter table ' ~ relation ~ ' set tblproperties (' ~ changes | join(', ') ~ ')') -%}
    {%- endif -%}
{% endmacro %}
