{#- Whether `sql` calls a function whose value changes by itself (today's
    date, the clock, random numbers, reflection): a test whose query does
    is not reused, since the same query can answer differently. It cannot
    see inside a Python UDF. -#}
{% macro _calls_changing_function(sql) %}
    {{ return(modules.re.search('(?i)\\b(current_date|curdate|current_timestamp|now|localtimestamp|unix_timestamp|current_timezone|rand|randn|random|uuid|shuffle|reflect|java_method)\\b', sql) is not none) }}
{% endmacro %}
