{#- One `describe table extended` of a relation, read into a dict:
    `columns` (each "name type", in order), `type` (upper case: VIEW,
    MANAGED, EXTERNAL), `provider`, `text` (a view's SQL as Spark reads
    it) and `properties` (the Table Properties row as text); none for
    what the relation lacks. -#}
{% macro _relation_description(relation) %}
    {%- set found = {'columns': [], 'type': none, 'provider': none, 'text': none, 'properties': none} -%}
    {%- set fields = {'Type': 'type', 'Provider': 'provider', 'View Text': 'text', 'Table Properties': 'properties'} -%}
    {%- set in_columns = [true] -%}
    {%- for row in run_query('describe table extended ' ~ relation) -%}
        {%- set name = row[0] or '' -%}
        {%- if name == '' or name.startswith('#') -%}
            {%- do in_columns.append(false) -%}
        {%- elif in_columns[-1] -%}
            {%- do found['columns'].append(name ~ ' ' ~ row[1]) -%}
        {%- elif name in fields -%}
            {%- do found.update({fields[name]: row[1]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do found.update({'type': (found['type'] or '') | upper or none}) -%}
    {{ return(found) }}
{% endmacro %}
