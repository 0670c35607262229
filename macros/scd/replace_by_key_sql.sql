{#
    Incremental strategy `replace_by_key`: the model returns every row of
    the entities it recomputed (e.g. all versions of the customers touched
    since the last run); those entities' rows in the table are replaced in
    one atomic MERGE: matching rows updated, new ones inserted, rows of those
    entities that are no longer produced deleted. The entities recomputed
    are those of the model's rows, and those `gold_changed_only` listed for
    this run (so an entity that produces no row any more is deleted). A run
    that recomputed nothing commits nothing; one whose SQL carries
    replace_by_key_nothing_recomputed (its inputs did not change:
    gold_changed_only and scd2_history put it there) does not even compute
    its rows.

        config(incremental_strategy='replace_by_key', unique_key=['customer_sk', 'customer_id'],
               meta={'replace_key': 'customer_id'})

    unique_key: one column or a list; with the entity column in it, the
    MERGE filters the table by the entities it replaces
    (_replace_by_key_entity_list).

    meta replace_write_mode: the table's Iceberg write.merge/update/delete
    mode, set on its first replace when it differs (default: none, the table
    as made: copy-on-write). merge-on-read writes delete files for the rows
    a MERGE replaces, not again every data file holding one (measured
    2026-12-06, a 1M-row dimension, 10 entities: its MERGE 4.3-7.1 s
    copy-on-write, 1.8-3.2 s merge-on-read; table maintenance compacts the
    delete files). A table whose changes a mart reads (gold_changed_rows:
    Iceberg's changelog, a fact) must stay copy-on-write: a changelog cannot
    read delete files. The dimensions are merge-on-read (dbt_project.yml).
#}
{% macro replace_by_key_sql(source, target) %}
    {%- set unique_key = config.get('unique_key') -%}
    {%- set unique_key = [unique_key] if unique_key is string else unique_key -%}
    {%- set entity = _cdc_setting('replace_key') -%}
    {%- if not unique_key or not entity -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': incremental_strategy "
            ~ "'replace_by_key' needs unique_key (a column or a list) and meta replace_key (the entity column).") -%}
    {%- endif -%}
    {%- if replace_by_key_nothing_recomputed() in (model.compiled_code or '') -%}
        {%- do log(model.name ~ ': no input changed since the last build, nothing to replace', info=true) -%}
        {{ return('select 0 as replaced') }}
    {%- endif -%}
    {%- set listed = target.identifier ~ '__changed' -%}
    {%- set has_listed = run_query("show views like '" ~ listed ~ "'").rows | length > 0 -%}
    {%- set described = adapter.get_columns_in_relation(source) -%}
    {%- set columns = described | map(attribute='name') | list -%}
    {%- do _replace_by_key_table_properties(target, _cdc_setting('replace_write_mode')) -%}
    {#- the recomputed rows, computed once and written to scratch files
        (the merge reads them three times; with `cache table` on the model's
        view Spark still recomputed it, measured); none: no entity changed,
        nothing to commit -#}
    {%- set rows = _cdc_scratch_write(target.schema, target.identifier ~ '__replaced', 'select * from ' ~ source) -%}
    {%- set entities = 'select ' ~ entity ~ ' from ' ~ rows
                       ~ ((' union select ' ~ entity ~ ' from ' ~ listed) if has_listed else '') -%}
    {%- set listed_entities = _replace_by_key_entity_list(entities, entity, unique_key, described,
                                                          listed if has_listed else none) -%}
    {%- if listed_entities['any'] -%}
        {%- do run_query(_replace_by_key_merge(rows, target, columns, unique_key, entity, entities,
                                               listed_entities['list'])) -%}
    {%- else -%}
        {%- do log(model.name ~ ': no entity changed, nothing to replace', info=true) -%}
    {%- endif -%}
    {%- do _cdc_scratch_drop(target.schema, rows) -%}
    {%- if has_listed -%}
        {%- do _cdc_scratch_drop(target.schema, listed) -%}
    {%- endif -%}
    {{ return('select 0 as replaced') }}
{% endmacro %}

{#- The comment a model's SQL carries when the model knows, at compile
    time, that no entity needs recomputing (its SQL then returns no row):
    replace_by_key then runs nothing, not even the query. Named after the
    invocation, so SQL compiled by an earlier command never matches. -#}
{% macro replace_by_key_nothing_recomputed() -%}
    /* replace_by_key: nothing to recompute in run {{ invocation_id }} */
{%- endmacro %}

{#- Keys compared null-safe (`<=>`): a NULL entity or key (an order without
    a customer) is replaced like any other; with `=` and `in` it never
    matched, so its rows stayed or were inserted again. -#}
{% macro _replace_by_key_merge(source, target, columns, unique_key, entity, entities, entity_list) %}
    {%- set listed = ('`' ~ entity ~ '` in (' ~ entity_list ~ ')') if entity_list else none %}
    merge into {{ target }} as t
    using (
        select {{ columns | join(', ') }}, false as _replace_delete
        from {{ source }}
        union all
        select {% for column in columns %}old.{{ column }}, {% endfor %}true
        from {{ target }} as old
        where {{ ('old.' ~ listed ~ ' and ') if listed }}exists (
                select 1 from ({{ entities }}) as e where e.{{ entity }} <=> old.{{ entity }})
            and not exists (
                select 1 from {{ source }} as n
                where {% for column in unique_key %}n.{{ column }} <=> old.{{ column }}
                    {{- ' and ' if not loop.last }}{% endfor %}
            )
    ) as s
    on {{ ('t.' ~ listed ~ ' and ') if listed }}{% for column in unique_key %}t.{{ column }} <=> s.{{ column }}{{ ' and ' if not loop.last }}{% endfor %}
    when matched and s._replace_delete then delete
    when matched then update set
        {%- for column in columns %}
        t.{{ column }} = s.{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    when not matched and not s._replace_delete then insert ({{ columns | join(', ') }})
        values ({% for column in columns %}s.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}

{#- Whether any entity is to be replaced (`any`), and the entities as a
    list of SQL literals (`list`, none when there is none to write), so that
    the MERGE filters the table by them before it joins it: a MERGE that may
    insert joins the table on the side Spark cannot broadcast, so without a
    filter on the table's own columns it shuffles all of it (measured
    2026-12-06, a 10M-row dimension, ten entities: 11.4 s). Listed only when
    the entity column is part of the unique key (a row of the table that
    matches a recomputed row then has its entity, so the filter drops no
    match) and there are at most cdc_key_list_max entities, each of which a
    literal finds (_cdc_key_literal: no NULL entity, for one), and the
    entities `listed` by gold_changed_only (a view, or none) are of the
    model's type (a literal is written for one type: a wider decimal
    written at the model's scale would be rounded). One query either way
    (it also tells whether there is any). -#}
{% macro _replace_by_key_entity_list(entities, entity, unique_key, described, listed) %}
    {%- set data_type = (described | selectattr('name', 'equalto', entity) | map(attribute='data_type')
                         | first) if entity in unique_key else none -%}
    {%- if data_type and listed -%}
        {%- set listed_type = run_query('describe ' ~ listed).rows | selectattr(0, 'equalto', entity)
                              | map(attribute=1) | first -%}
        {%- set data_type = data_type if (listed_type or '') | lower == data_type | lower else none -%}
    {%- endif -%}
    {%- set found = _cdc_key_literal_list(entity, data_type, entities) -%}
    {%- if found['any'] is none -%}
        {%- do found.update({'any': run_query('select count(*) from (' ~ entities ~ ')').rows[0][0] > 0}) -%}
    {%- endif -%}
    {{ return(found) }}
{% endmacro %}

{#- Set on `target` the model's tblproperties config (dbt_project.yml:
    a table made before it gets it here, for the files written from now
    on) and the write mode `mode` (none: leave it) with format version 2,
    those that differ (table_properties_apply). -#}
{% macro _replace_by_key_table_properties(target, mode) %}
    {%- set wanted = {} -%}
    {%- do wanted.update(config.get('tblproperties') or {}) -%}
    {%- if mode is not none -%}
        {%- do wanted.update(_iceberg_write_mode_properties(mode, 'replace_write_mode')) -%}
    {%- endif -%}
    {%- do table_properties_apply(target, wanted) -%}
{% endmacro %}
