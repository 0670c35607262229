{#
    cdc_ignore_null_updates and cdc_exclude_from_update: an update writes
    only some columns (not a NULL; not an excluded column), an insert writes
    all. A batch gives each key's applied change the values the key would
    have after its changes one at a time, in sequence order:

      - the key's changes newer than what is stored (the stored row, its
        tombstone; for a key neither stored nor tombstoned, the horizon's
        newest forgotten delete: _cdc_order_batch's `_cdc_boundary`) and not
        older than the newest truncate (`_cdc_truncated`) fall in stretches, a new one after each delete;
        a stretch is open when the key has no live row at its start (after
        a delete; or the first, when the stored row is none, marked
        deleted, older than a truncate or than its own tombstone);
      - an open stretch's insert (a birth) is its first change that is not
        a delete and holds every value (no Debezium TOAST placeholder,
        filled or not: one at a time, an earlier such change would be
        quarantined), or failing one, in the key's first stretch when no
        row is stored, the delete that closes it (its own values: what a
        soft delete of a key with no row writes); the changes before it,
        and a stretch without either, give no value;
      - no value passes a delete, but in soft mode to the delete itself:
        a soft delete keeps the row's values, so it takes the newest value
        given before it, in its stretch or an earlier one (none: the
        stored value), for every column but the keys and what describes
        the change (_cdc_change_bookkeeping), also those an update writes
        whole;
      - an insert writes every column as sent (a NULL too), an update the
        columns it carries (a value that is not NULL, not an excluded
        column; not a TOAST placeholder left unfilled or filled from before
        the boundary);
      - a column no change carries since the last insert keeps the stored
        value (the MERGE keeps it: `_cdc_keep_stored`);
      - the columns the files carry and the model does not declare
        (`_cdc_extra`) are written whole by every change that gives values,
        so a soft delete takes them as the newest such change before it
        wrote them (none: kept as stored).

    Soft-mode models without partial updates whose changes may leave
    columns unsent (Debezium TOAST) resolve their deletes here too
    (run['resolve'], _cdc_soft_delete_values): the partial columns are then
    none, and only a delete's values are resolved.

    Only the MERGE reads these values, from scratch files written here (so
    the MERGE still reads a filter over a scan, which Spark's runtime bloom
    filter needs: _cdc_run_merge): the batch, its change log and the tie
    checks keep each change as sent.
#}

{#- The columns an update may leave as stored: those of
    cdc_exclude_from_update, and with cdc_ignore_null_updates every column
    of the entity (not a key, the sequence, the operation or a `_cdc_`
    column, which describe the change). None for a change log (a model
    keyed by its sequence: each change is its own row). -#}
{% macro _cdc_partial_columns(cfg, data_columns) %}
    {%- set partial = [] -%}
    {%- set bookkeeping = cfg['keys'] + cfg['sequence_by'] + [cfg['operation_column']] -%}
    {%- if not cfg['change_log'] -%}
        {%- for column in data_columns if column.name not in bookkeeping
                and (column.name in cfg['exclude_from_update']
                     or (cfg['ignore_null_updates'] and not column.name.startswith('_cdc_'))) -%}
            {%- do partial.append(column.name) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(partial) }}
{% endmacro %}

{#- The MERGE's source for a model with partial updates, or whose soft
    deletes are resolved here (run['resolve']; `rows`: the batch): the
    applied changes, each partial column with the key's value after its
    changes (and a soft delete's every column), and the columns to keep as
    stored, with every change's outcome and rank. Written to scratch
    files; returns the view that reads them. -#}
{% macro _cdc_partial_updates(run, rows) %}
    {%- set cfg = run['cfg'] -%}
    {%- set partial = run['partial'] -%}
    {#- the columns given a value here: the partial ones; in soft mode, for
        a delete, every other column it keeps too -#}
    {%- set resolved = partial + (_cdc_carried_columns(cfg, run['data_columns']) | reject('in', partial) | list
                                  if run['soft'] else []) -%}
    {%- set key_list = '`' ~ cfg['keys'] | join('`, `') ~ '`' -%}
    {%- set order_by -%}
        order by {% for column in cfg['sequence_by'] %}`{{ column }}`, {% endfor %}_cdc_file, _cdc_row
    {%- endset -%}
    {%- set in_order = 'partition by ' ~ key_list ~ ' ' ~ order_by -%}
    {%- set seq = _cdc_seq_struct(none, cfg['sequence_by']) -%}
    {#- a stretch is open after a delete, or the first when the key has no
        live row -#}
    {%- set open = '(_cdc_stretch > 0 or not _cdc_key_live)' -%}
    {#- a TOAST column a change does not carry: left unfilled, or filled
        from a change at or before the boundary -#}
    {%- set gap = {} -%}
    {%- for name in resolved -%}
        {%- set given = '_cdc_filled_from[' ~ sql_string(name) ~ ']' -%}
        {%- do gap.update({name: ('array_contains(_cdc_unavailable, ' ~ sql_string(name) ~ ') or coalesce('
                                  ~ given ~ ' <= _cdc_key_boundary, false) or coalesce(' ~ given
                                  ~ ' < _cdc_key_truncated, false)') if run['toast'] else 'false'}) -%}
    {%- endfor -%}
    {%- set query %}
    select
        {%- for column in run['data_columns'] %}
        {%- if column.name in partial %}
        _cdc_given_{{ resolved.index(column.name) + 1 }}.v as `{{ column.name }}`,
        {%- elif column.name in resolved %}
        case when _cdc_is_delete then _cdc_given_{{ resolved.index(column.name) + 1 }}.v
            else `{{ column.name }}` end as `{{ column.name }}`,
        {%- else %}
        `{{ column.name }}`,
        {%- endif %}
        {%- endfor %}
        {%- if run['soft'] and '_cdc_extra' in run['names'] %}
        {#- the columns the model does not declare: written whole by each
            change that gives values; a soft delete's, as the newest such
            change before it wrote them -#}
        case when _cdc_is_delete then _cdc_value_extra.v else _cdc_extra end as _cdc_extra,
        {%- elif '_cdc_extra' in run['names'] %}
        _cdc_extra,
        {%- endif %}
        _cdc_is_delete,
        {%- if run['soft'] %}
        {#- a soft delete's deleted_at: the delete's own value -#}
        `{{ cfg['deleted_at_column'] }}` as _cdc_deleted_at,
        {%- endif %}
        _cdc_outcome,
        _cdc_rank,
        {#- a column no change carried since the last insert (possible only
            while the key has a stored row: live, or for a soft delete any
            row): kept as stored; with Debezium TOAST, also a column the
            change left unsent (not a soft delete's, whose every value is
            given here) -#}
        {%- set unsent = 'filter(_cdc_keep_stored, c -> not _cdc_is_delete)' if run['soft'] else '_cdc_keep_stored' %}
        {#- (`_cdc_extra`: a soft delete no change gave values to keeps the
            stored values of the columns the model does not declare, or no
            longer selects) -#}
        {{ 'concat(' if run['soft'] }}{{ 'array_union(' ~ unsent ~ ', ' if run['toast'] }}filter(array(
            {%- for name in resolved %}{{ sql_string(name) }}{{ ', ' if not loop.last }}{% endfor -%}
        ), c -> case
            {%- for name in resolved %}
            when c = {{ sql_string(name) }} then {{ '' if name in partial else '_cdc_is_delete and ' -}}
                _cdc_given_{{ loop.index }} is null
            {%- endfor %}
        end){{ ')' if run['toast'] }}
        {{- ", filter(array('_cdc_extra'), c -> _cdc_is_delete and _cdc_value_extra is null))" if run['soft'] }} as _cdc_keep_stored
    from (
        select
            *,
            {#- the newest value given in the change's stretch; a soft
                delete's, in any stretch before it -#}
            {%- for name in resolved %}
            case when _cdc_value_{{ loop.index }}.s = _cdc_stretch{{ ' or _cdc_is_delete' if run['soft'] }}
                then _cdc_value_{{ loop.index }} end as _cdc_given_{{ loop.index }}
            {{- ',' if not loop.last }}
            {%- endfor %}
        from (
            select
                *,
                {#- (an update gives a partial column when it carries it: not a
                    NULL with cdc_ignore_null_updates, not an excluded column) -#}
                {%- for name in resolved %}
                last_value(case when _cdc_gives and (not _cdc_is_delete or _cdc_birth)
                                    {%- if name in partial %} and (_cdc_birth
                                    {{- '' if name in cfg['exclude_from_update'] else ' or `' ~ name ~ '` is not null' }})
                                    {%- endif %}
                                    and not ({{ gap[name] }})
                                then named_struct('v', `{{ name }}`, 's', _cdc_stretch) end, true)
                    over ({{ in_order }} rows between unbounded preceding and current row) as _cdc_value_{{ loop.index }}
                {{- ',' if not loop.last or run['soft'] }}
                {%- endfor %}
                {%- if run['soft'] %}
                last_value(case when _cdc_gives and (not _cdc_is_delete or _cdc_birth)
                                then named_struct('v', {{ '_cdc_extra' if '_cdc_extra' in run['names'] else 'true' }}) end, true)
                    over ({{ in_order }} rows between unbounded preceding and current row) as _cdc_value_extra
                {%- endif %}
            from (
                select
                    *,
                    coalesce(_cdc_order = _cdc_birth_at, false) as _cdc_birth,
                    not _cdc_open or coalesce(_cdc_order >= _cdc_birth_at, false) as _cdc_gives
                from (
                    select
                        *,
                        {#- an open stretch's insert: its first whole change; without
                            one, in the first stretch of a key with no stored
                            row, the delete that closes it (the row a soft delete
                            of a key with no row writes), else nothing -#}
                        {{ open }} as _cdc_open,
                        case when {{ open }} then coalesce(
                            min(case when _cdc_whole then _cdc_order end) over (partition by {{ key_list }}, _cdc_stretch),
                            case when _cdc_stretch = 0 and not _cdc_key_stored then
                                min(case when _cdc_is_delete then _cdc_order end) over (partition by {{ key_list }}, _cdc_stretch)
                            end)
                            end as _cdc_birth_at
                    from (
                        select
                            *,
                            row_number() over ({{ in_order }}) as _cdc_order,
                            coalesce(sum(case when _cdc_is_delete then 1 end) over (
                                {{ in_order }} rows between unbounded preceding and 1 preceding), 0) as _cdc_stretch,
                            not _cdc_is_delete
                                {%- if run['toast'] %} and size(_cdc_unavailable) = 0 and size(_cdc_filled_from) = 0{% endif %}
                                as _cdc_whole
                        from (
                            select
                                *,
                                max(_cdc_boundary) over (partition by {{ key_list }}) as _cdc_key_boundary,
                                max(_cdc_truncated) over (partition by {{ key_list }}) as _cdc_key_truncated,
                                bool_or(_cdc_live) over (partition by {{ key_list }}) as _cdc_key_live,
                                bool_or(_cdc_stored) over (partition by {{ key_list }}) as _cdc_key_stored
                            from {{ rows }}
                            where {{ _cdc_kept() }} and not _cdc_is_truncate
                        ) as bounded
                        where _cdc_rank = 1 or (coalesce({{ seq }} > _cdc_key_boundary, true)
                                               and coalesce({{ seq }} >= _cdc_key_truncated, true))
                    ) as stretches
                ) as births
            ) as givers
        ) as valued
    ) as resolved
    {%- endset -%}
    {{ return(_cdc_scratch_write(run['schema'], run['batch'] ~ '_partial', query, folder=run['batch'] ~ '/partial')) }}
{% endmacro %}
