{#- Delete the rows of `target` matching `predicate` (only when there are:
    an empty delete would still add a snapshot), count them in
    <ops>.erasure_events and in result['removed']. -#}
{% macro _gdpr_delete(ledger, target, predicate, run_id, origin, result) %}
    {%- set count = run_query('select count(*) from ' ~ target ~ ' where ' ~ predicate).rows[0][0] -%}
    {%- if count > 0 -%}
        {%- do run_query('delete from ' ~ target ~ ' where ' ~ predicate) -%}
        {%- do run_query("insert into " ~ ledger['events'] ~ " values ('" ~ run_id ~ "', '" ~ origin ~ "', '"
                         ~ target ~ "', " ~ count ~ ", current_timestamp())") -%}
        {%- do log('gdpr ' ~ origin ~ ': removed ' ~ count ~ ' row(s) of erased subjects from ' ~ target, info=true) -%}
    {%- endif -%}
    {%- do result['removed'].update({target | string: count}) -%}
{% endmacro %}
