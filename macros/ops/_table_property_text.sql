{#- A table property's value as Spark prints it: a boolean as 'true' or
    'false' (Jinja would print 'True'), anything else as its text. Both the
    tables' creation and table_properties_apply's comparison write values
    through it, so a table made with a value is not altered by the next
    run for its spelling. -#}
{% macro _table_property_text(value) %}
    {{ return(value | string | lower if value is boolean else value | string) }}
{% endmacro %}
