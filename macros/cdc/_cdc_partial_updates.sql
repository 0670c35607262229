{#
    cdc_ignore_null_updates and cdc_exclude_from_update: an update writes
    only some columns (not a NULL; not an excluded column), an insert writes
    all. A batch gives each key's applied change the values the key would
    have after its changes one at a time, in sequence order:

      - a change is an insert (a birth) when the key has no live row before
        it: the first change newer than what is stored, when the stored row
        is none, marked deleted (soft mode) or older than a truncate; any
        change right after a delete of the key;
      - an insert writes every column as sent (a NULL too); an update
        writes the columns it carries (a value that is not NULL; not an
        excluded column);
      - a column no change carries since the last insert keeps the stored
        value (the MERGE keeps it: `_cdc_keep_stored`).

    Changes not newer than the stored row, the key's tombstone or a
    truncate give no value (_cdc_order_batch's `_cdc_boundary`). Only the
    MERGE reads these values: the batch, its change log and the tie checks
    keep each change as sent.
#}

{#- The columns an update may leave as stored: those of
    cdc_exclude_from_update, and with cdc_ignore_null_updates every column
    of the entity (not a key, the sequence, the operation or a `_cdc_`
    column, which describe the change). None for a change log (a model
    keyed by its sequence: each change is its own row). -#}
{% macro _cdc_partial_columns(cfg, data_columns) %}
    {%- set partial = [] -%}
    {%- set bookkeeping = cfg['keys'] + cfg['sequence_by'] + [cfg['operation_column']] -%}
    {%- if not (cfg['sequence_by'] | select('in', cfg['keys']) | list) -%}
        {%- for column in data_columns if column.name not in bookkeeping
                and (column.name in cfg['exclude_from_update']
                     or (cfg['ignore_null_updates'] and not column.name.startswith('_cdc_'))) -%}
            {%- do partial.append(column.name) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(partial) }}
{% endmacro %}

{#- The MERGE's source for a model with partial updates: the applied
    changes of the batch `rows`, each partial column with the key's value
    after its changes, and the columns to keep as stored. -#}
{% macro _cdc_partial_updates(run, rows) %}
    {%- set cfg = run['cfg'] -%}
    {%- set partial = run['partial'] -%}
    {%- set key_list = '`' ~ cfg['keys'] | join('`, `') ~ '`' -%}
    {%- set in_order -%}
        partition by {{ key_list }}
        order by {% for column in cfg['sequence_by'] %}`{{ column }}`, {% endfor %}_cdc_file, _cdc_row
    {%- endset %}
    select
        {%- for column in run['data_columns'] %}
        {{ '_cdc_value_' ~ (partial.index(column.name) + 1) ~ '.v as `' ~ column.name ~ '`'
           if column.name in partial else '`' ~ column.name ~ '`' }},
        {%- endfor %}
        {%- if '_cdc_extra' in run['names'] %}
        _cdc_extra,
        {%- endif %}
        _cdc_is_delete,
        {#- a column no change carried since the last insert (possible only
            while the key has a live stored row): kept as stored -#}
        {{ 'array_union(_cdc_keep_stored, ' if run['toast'] }}filter(array(
            {%- for name in partial %}{{ sql_string(name) }}{{ ', ' if not loop.last }}{% endfor -%}
        ), c -> case
            {%- for name in partial %}
            when c = {{ sql_string(name) }} then _cdc_value_{{ loop.index }} is null
            {%- endfor %}
        end){{ ')' if run['toast'] }} as _cdc_keep_stored
    from (
        select
            *,
            {%- for name in partial %}
            last_value(case when _cdc_birth or {{ 'false' if name in cfg['exclude_from_update']
                                                  else '`' ~ name ~ '` is not null' }}
                            then named_struct('v', `{{ name }}`) end, true)
                over ({{ in_order }} rows between unbounded preceding and current row) as _cdc_value_{{ loop.index }}
            {{- ',' if not loop.last }}
            {%- endfor %}
        from (
            select
                *,
                ((row_number() over ({{ in_order }})) = 1 and not _cdc_key_live)
                    or coalesce(lag(_cdc_is_delete) over ({{ in_order }}), false) as _cdc_birth
            from (
                select
                    *,
                    max(_cdc_boundary) over (partition by {{ key_list }}) as _cdc_key_boundary,
                    bool_or(_cdc_live) over (partition by {{ key_list }}) as _cdc_key_live
                from {{ rows }}
                where {{ _cdc_kept() }} and not _cdc_is_truncate
            ) as bounded
            where _cdc_rank = 1 or _cdc_key_boundary is null
                or {{ _cdc_seq_struct(none, cfg['sequence_by']) }} > _cdc_key_boundary
        ) as births
    ) as resolved
    where _cdc_outcome = 'applied' and _cdc_rank = 1
{% endmacro %}
