{#
    Incremental strategy `replace_by_key`: the model returns every row of
    the entities it recomputed (e.g. all versions of the customers touched
    since the last run); those entities' rows in the table are replaced in
    one atomic MERGE: matching rows updated, new ones inserted, rows of those
    entities that are no longer produced deleted. A run that recomputed
    nothing commits nothing.

        config(incremental_strategy='replace_by_key', unique_key='customer_sk',
               meta={'replace_key': 'customer_id'})
#}
{% macro replace_by_key_sql(source, target) %}
    {%- set unique_key = config.get('unique_key') -%}
    {%- set entity = _cdc_setting('replace_key') -%}
    {%- if not unique_key or unique_key is not string or not entity -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': incremental_strategy "
            ~ "'replace_by_key' needs unique_key (one column) and meta replace_key (the entity column).") -%}
    {%- endif -%}
    {%- set columns = adapter.get_columns_in_relation(source) | map(attribute='name') | list -%}
    {#- the recomputed rows, computed once and written to scratch files
        (the merge reads them three times; with `cache table` on the model's
        view Spark still recomputed it, measured); none: no entity changed,
        nothing to commit -#}
    {%- set rows = _cdc_scratch_write(target.schema, target.identifier ~ '__replaced', 'select * from ' ~ source) -%}
    {%- if run_query('select count(*) from ' ~ rows).rows[0][0] > 0 -%}
        {%- do run_query(_replace_by_key_merge(rows, target, columns, unique_key, entity)) -%}
    {%- else -%}
        {%- do log(model.name ~ ': no entity changed, nothing to replace', info=true) -%}
    {%- endif -%}
    {%- do _cdc_scratch_drop(target.schema, rows) -%}
    {{ return('select 0 as replaced') }}
{% endmacro %}

{% macro _replace_by_key_merge(source, target, columns, unique_key, entity) %}
    merge into {{ target }} as t
    using (
        select {{ columns | join(', ') }}, false as _replace_delete
        from {{ source }}
        union all
        select {% for column in columns %}old.{{ column }}, {% endfor %}true
        from {{ target }} as old
        where old.{{ entity }} in (select {{ entity }} from {{ source }})
            and old.{{ unique_key }} not in (select {{ unique_key }} from {{ source }})
    ) as s
    on t.{{ unique_key }} = s.{{ unique_key }}
    when matched and s._replace_delete then delete
    when matched then update set
        {%- for column in columns %}
        t.{{ column }} = s.{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    when not matched and not s._replace_delete then insert ({{ columns | join(', ') }})
        values ({% for column in columns %}s.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}
