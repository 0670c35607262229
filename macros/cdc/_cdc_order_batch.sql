{#
    Order and deduplicate one CDC batch, and decide every row's outcome,
    each by its own rule:
      held         its file is incomplete (e.g. cut mid-row): kept apart,
                   neither applied nor quarantined nor logged;
      quarantined  a reject reason (cdc_changes', or a rule of
                   _cdc_reject_reason on the model's own columns), or the
                   newest change of a key the table does not hold that is
                   older than a forgotten delete, or lacks a TOAST value
                   (no live stored row, and none from the batch since the
                   key's last removal);
      superseded   a later change of its key in the batch, or not newer
                   than the stored row, the tombstone or a truncate;
      applied      the rest.
    The batch is written to scratch files (_cdc_scratch): its row numbers
    come from a non-deterministic function, which Spark refuses as a MERGE
    source, and every later step reads it. An incremental run of a large
    batch writes the ranked rows first and the batch with its outcomes from
    them; a small one ranks in the same statement. Either way the stored
    rows of the batch's keys are found without shuffling the table: by the
    batch's key list, _cdc_batch_keys, or a semi join; tables smaller than
    cdc_key_filter_min_bytes are read whole.
    Before anything is written to a table the run fails on lost or invented
    rows (_cdc_check_conservation) and on ties the sequence cannot break:
    two usable rows of a key, both truncates or neither, with the same
    sequence and different content (provenance aside; a column's value
    after Debezium's unavailable values are filled); or a key's newest
    change with the sequence of the row the table holds, or of the key's
    tombstone, that is not a repeat of it (_cdc_check_stored_ties: a tie
    across runs); and on a column the files carry undeclared whose name a
    column of the model has (_cdc_check_undeclared_columns). Rows of a key
    are in sequence order in the window that ranks them, so a tie is a row
    that differs from the one before it with the same sequence: flagged in
    that same window (`_cdc_tie`), not by a second pass over the whole
    batch.
    Returns the batch's counts by name (_cdc_batch_counts).
#}
{% macro _cdc_order_batch(run) %}
    {%- set cfg = run['cfg'] -%}
    {%- set names = run['names'] -%}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set target = run['target'] -%}
    {%- set has_tombstones = run['has_tombstones'] -%}
    {#- the tombstones and the horizon are looked up unless known to be
        empty (_cdc_prepare_target): a table of no row would only add a
        Spark job (a broadcast) to the batch's write -#}
    {%- set reads_tombstones = has_tombstones and not run['tombstones_empty'] -%}
    {%- set reads_horizon = not run['horizon_empty'] -%}
    {%- set can_truncate = cfg['can_truncate'] -%}
    {%- set provenance = ['_cdc_file', '_cdc_row', '_cdc_file_modified_at'] -%}
    {#- a truncate event carries no key: applied as a truncate, or (a change
        log, cdc_truncate_when false) kept as an event with a null key -#}
    {%- set is_truncate = 'coalesce(' ~ cfg['truncate_when'] ~ ', false)' -%}
    {#- a row's content, provenance aside, as one comparable value (a map is
        not: the files' extra columns as sorted entries, a map the model
        makes as JSON) -#}
    {%- set content = [] -%}
    {%- for column in run['data_columns'] if column.name not in provenance -%}
        {%- set value = 'to_json(`' ~ column.name ~ '`)' if 'map<' in column.data_type | lower
                        else '`' ~ column.name ~ '`' -%}
        {%- do content.append(sql_string(column.name) ~ ', ' ~ value) -%}
    {%- endfor -%}
    {%- if '_cdc_extra' in names -%}{%- do content.append("'_cdc_extra', array_sort(map_entries(_cdc_extra))") -%}{%- endif -%}
    {%- set held = '_cdc_file_held is not null' if '_cdc_file_held' in names else 'false' -%}
    {%- set checks = _cdc_reject_reason(keys, cfg['operation_column'], cfg['operations'], seq,
                                        keyless=is_truncate ~ " or `" ~ cfg['operation_column'] ~ "` <=> 'T'") -%}
    {%- set key_list = '`' ~ keys | join('`, `') ~ '`' -%}
    {%- set seq_list = '`' ~ seq | join('`, `') ~ '`' -%}
    {%- set key_join = [] -%}
    {%- for key in keys -%}{%- do key_join.append('t.`' ~ key ~ '` <=> s.`' ~ key ~ '`') -%}{%- endfor -%}
    {%- set rows = 'select * from src' -%}
    {%- if run['toast'] -%}
        {%- set fillable = [] -%}
        {%- for column in run['data_columns'] if column.name not in keys and column.name not in seq
                                                and not column.name.startswith('_cdc_') -%}
            {%- do fillable.append(column.name) -%}
        {%- endfor -%}
        {%- set batch_columns = names + ['_cdc_held', '_cdc_reason', '_cdc_is_delete', '_cdc_is_truncate'] -%}
        {#- by the entity: a model keyed by the sequence too (a change log)
            holds one row per change, each filled from the changes before it -#}
        {%- set rows = _cdc_fill_unavailable('src', batch_columns, fillable, _cdc_entity_keys(cfg), seq) -%}
    {%- endif -%}
    {#- a key's changes (rows to apply apart), newest first -#}
    {%- set by_entity = 'partition by _cdc_reason is null and not _cdc_held, _cdc_is_truncate, ' ~ key_list -%}
    {%- set by_key -%}
        {{ by_entity }}
        order by {% for column in seq %}`{{ column }}` desc, {% endfor %}_cdc_file, _cdc_row
    {%- endset -%}
    {%- set ranked_sql -%}
        with src as (
            select
                *,
                {{ held }} as _cdc_held,
                {{ 'coalesce(_cdc_reject_reason, ' ~ checks ~ ')' if '_cdc_reject_reason' in names else checks }} as _cdc_reason,
                coalesce({{ cfg['delete_when'] }}, false) as _cdc_is_delete,
                {{ is_truncate }} as _cdc_is_truncate
            from {{ run['source'] }}
        ),

        ranking as (
            select
                *,
                case when _cdc_reason is null and not _cdc_held and not _cdc_is_truncate
                    then row_number() over by_key end as _cdc_rank,
                _cdc_reason is null and not _cdc_held
                    and lag({{ _cdc_seq_struct(none, seq) }}) over by_key <=> {{ _cdc_seq_struct(none, seq) }}
                    and not lag(named_struct({{ content | join(', ') }})) over by_key
                            <=> named_struct({{ content | join(', ') }}) as _cdc_tie
                {%- if run['toast'] %},
                {#- the key's newest change holding every value (not a delete,
                    no placeholder, filled or not) and its newest delete: a
                    value filled in the batch is the key's only from such a
                    change on -#}
                max(case when not _cdc_is_delete and size(_cdc_unavailable) = 0 and size(_cdc_filled_from) = 0
                         then {{ _cdc_seq_struct(none, seq) }} end) over by_entity as _cdc_key_whole,
                max(case when _cdc_is_delete then {{ _cdc_seq_struct(none, seq) }} end) over by_entity
                    as _cdc_key_deleted
                {%- endif %}
                {%- if run['carry'] %},
                {{ _cdc_carry_sql(run, 'by_key', 'by_key_whole') }}
                {%- endif %}

            from ({{ rows }}) as batch_rows
            window by_key as ({{ by_key }}){% if run['carry'] %},
                by_key_whole as ({{ by_key }} rows between unbounded preceding and unbounded following)
            {%- endif %}{% if run['toast'] %}, by_entity as ({{ by_entity }}){% endif %}
        )

        select * from ranking
    {%- endset -%}
    {#- An incremental run of a large batch (adaptive execution on,
        cdc_adaptive_min_bytes) ranks it first, into scratch files: the
        stored rows of its keys are then found by a semi join whose small
        side is those files (the table is scanned, not shuffled), and the
        parse is not computed twice. A small batch is ranked inside the one
        statement that writes its outcomes: computing its few rows twice
        costs less than a write and its Spark jobs (measured 2026-11-28, a
        10-row file on a 1M-row table: the ranked write took 0.58-0.80 s).
        The first run's table is empty: one statement. Every set of files
        lies in the batch's folder, emptied once at the end of the run
        (_cdc_record). -#}
    {%- set batch = run['batch'] -%}
    {%- set ranked = batch ~ '_ranked' -%}
    {#- Tables too small to be worth filtering (run['small_tables'],
        cdc_key_filter_min_bytes) are joined whole: no key list, no semi
        join -#}
    {%- set filtered = not run['initial'] and not run['small_tables'] -%}
    {%- if not run['initial'] and run['adaptive'] -%}
        {%- do _cdc_scratch_write(run['schema'], ranked, ranked_sql, folder=batch ~ '/ranked') -%}
        {%- set ranked_sql = 'select * from ' ~ ranked -%}
        {%- if filtered -%}
            {%- do _cdc_batch_keys(run, ranked) -%}
        {%- endif -%}
    {%- elif filtered -%}
        {%- do _cdc_batch_keys(run, none) -%}
    {%- endif -%}
    {%- set keys_in = _cdc_keys_in(run, 'k') -%}
    {#- the batch's own rules, for the newest change of a key the table does
        not hold: older than a forgotten delete; or (Debezium TOAST) a
        column the source did not send, which nothing in the batch filled
        and no stored row can give -#}
    {#- a key neither stored nor tombstoned: the horizon's newest forgotten
        delete is what its changes must pass -#}
    {%- set unknown_key = 't._cdc_present is null' ~ (' and d.`' ~ keys[0] ~ '` is null' if reads_tombstones else '')
                          if has_tombstones and reads_horizon else none -%}
    {%- set beyond = 's._cdc_rank = 1 and ' ~ unknown_key ~ ' and ' ~ _cdc_seq_struct('s', seq) ~ ' <= h.newest'
                     if unknown_key else none -%}
    {#- (a delete there deletes nothing and needs no tombstone: the horizon
        keeps every older change out; superseded) -#}
    {%- set late_beyond = beyond ~ ' and not s._cdc_is_delete' if beyond else none -%}
    {#- the newest applied truncate: the horizon's, the batch's, or both -#}
    {%- set truncated = (['h.truncated'] if reads_horizon else []) + (['b.truncated'] if can_truncate else []) -%}
    {%- set newest_truncate = ('greatest(' ~ truncated | join(', ') ~ ')' if truncated | length > 1
                               else truncated[0]) if truncated else none -%}
    {#- a change older than that truncate: gone with it, whatever is stored -#}
    {%- set before_truncate = _cdc_seq_struct('s', seq) ~ ' < ' ~ newest_truncate if truncated else none -%}
    {%- set s_seq = _cdc_seq_struct('s', seq) -%}
    {%- set t_seq = _cdc_seq_struct('t', seq) -%}
    {%- set d_seq = _cdc_seq_struct('d', seq) -%}
    {%- set tombstone = 'd.`' ~ keys[0] ~ '` is not null' -%}
    {#- soft mode: whether the stored row is marked deleted (read for the
        rules below only) -#}
    {%- set stored_deleted = run['soft'] and (run['toast'] or run['partial']) -%}
    {#- the key has no live stored row: none, one older than the newest
        truncate, than its own tombstone (a run stopped between the
        tombstone and the MERGE), or one marked deleted -#}
    {%- set gone = ['t._cdc_present is null']
                   + (['coalesce(' ~ t_seq ~ ' < ' ~ newest_truncate ~ ', false)'] if truncated else [])
                   + (['coalesce(' ~ tombstone ~ ' and ' ~ t_seq ~ ' <= ' ~ d_seq ~ ', false)'] if reads_tombstones else [])
                   + (['coalesce(t._cdc_stored_deleted, false)'] if stored_deleted else []) -%}
    {%- set stored_gone = '(' ~ gone | join(' or ') ~ ')' -%}
    {#- a value given by a change at or before the key's last removal (the
        newest truncate, its tombstone, its row marked deleted, or for a key
        neither stored nor tombstoned the horizon's newest forgotten delete):
        a value that removal took away -#}
    {%- set removed = (['{q} < ' ~ newest_truncate] if truncated else [])
                      + (['(' ~ tombstone ~ ' and {q} <= ' ~ d_seq ~ ')'] if reads_tombstones else [])
                      + (['(t._cdc_stored_deleted and {q} <= ' ~ t_seq ~ ')'] if stored_deleted else [])
                      + (['(' ~ unknown_key ~ ' and {q} <= h.newest)'] if unknown_key else []) -%}
    {#- (Debezium TOAST) the columns a change has no value for: not sent, or
        filled from a change a removal came after, or (a key with no live
        stored row, where the fill is all there is) filled when no change of
        the batch since the key's last removal and delete holds every value
        (one at a time, the change that gave it would be quarantined) -#}
    {%- set based = 's._cdc_key_whole is not null and (s._cdc_key_deleted is null or s._cdc_key_whole > s._cdc_key_deleted)'
                    ~ (' and not coalesce(' ~ removed | join(' or ') | replace('{q}', 's._cdc_key_whole') ~ ', false)'
                       if removed else '') if run['toast'] else none -%}
    {%- set unsent_columns = 'array_union(s._cdc_unavailable, map_keys(map_filter(s._cdc_filled_from, (c, q) -> '
                             ~ (removed + ['not (' ~ based ~ ')']) | join(' or ') | replace('{q}', 'q') ~ ')))'
                             if run['toast'] else none -%}
    {#- ... on a key with no live stored row to keep them from. A change
        log, whose key includes the sequence, holds one row per change: it
        keeps the change as sent, the column NULL. -#}
    {%- set unsent = 's._cdc_rank = 1 and ' ~ stored_gone ~ ' and not s._cdc_is_delete and size(' ~ unsent_columns ~ ') > 0'
                     ~ (' and (d.`' ~ keys[0] ~ '` is null or ' ~ s_seq ~ ' >= ' ~ d_seq ~ ')' if reads_tombstones else '')
                     if run['toast'] and not cfg['change_log'] else none -%}
    {#- (a change older than a truncate is superseded, not quarantined: its
        reason would keep it out of the change log too) -#}
    {%- if before_truncate -%}
        {%- set late_beyond = late_beyond ~ ' and not coalesce(' ~ before_truncate ~ ', false)' if late_beyond else none -%}
        {%- set unsent = unsent ~ ' and not coalesce(' ~ before_truncate ~ ', false)' if unsent else none -%}
    {%- endif -%}
    {%- set batch_sql -%}
        with ranked as ({{ ranked_sql }})

        select
            s.*,
            case
                when s._cdc_held then 'held'
                when s._cdc_reason is not null then 'quarantined'
                {#- a truncate is applied unless an applied one is newer; a
                    change older than the newest truncate is gone with it -#}
                when s._cdc_is_truncate then
                    {%- if reads_horizon %}
                    case when h.truncated is null or {{ _cdc_seq_struct('s', seq) }} >= h.truncated
                        then 'applied' else 'superseded' end
                    {%- else %}
                    'applied'
                    {%- endif %}
                {%- if before_truncate %}
                when {{ before_truncate }} then 'superseded'
                {%- endif %}
                when s._cdc_rank > 1 then 'superseded'
                {%- if beyond %}
                when {{ beyond }} and s._cdc_is_delete then 'superseded'
                {%- endif %}
                {%- for rule in [late_beyond, unsent] if rule %}
                when {{ rule }} then 'quarantined'
                {%- endfor %}
                {#- newer than the stored row and than the key's tombstone; a
                    delete with its own tombstone's sequence is that delete
                    again: applied while the table still holds the row (a run
                    stopped after it wrote the tombstone, before its MERGE),
                    superseded once the row is gone (a redelivered delete) -#}
                when (t._cdc_present is null or {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }})
                    {%- if reads_tombstones %}
                    and (d.`{{ keys[0] }}` is null or {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('d', seq) }}
                         or (s._cdc_is_delete and coalesce(t._cdc_present, false)
                             and {{ _cdc_seq_struct('s', seq) }} = {{ _cdc_seq_struct('d', seq) }}))
                    {%- endif %}
                    then 'applied'
                else 'superseded'
            end as _cdc_outcome,
            {#- the newest change of a key with the sequence of the row the
                table holds or of the key's tombstone: a repeat (superseded),
                or a tie across runs (_cdc_check_stored_ties); not one older
                than an applied truncate (a row it marked deleted, soft mode,
                keeps its sequence: the change is gone with the truncate) -#}
            (coalesce(s._cdc_rank = 1 and t._cdc_present
                      and {{ _cdc_seq_struct('s', seq) }} = {{ _cdc_seq_struct('t', seq) }}, false)
                {%- if reads_tombstones %}
                or coalesce(s._cdc_rank = 1 and d.`{{ keys[0] }}` is not null
                            and {{ _cdc_seq_struct('s', seq) }} = {{ _cdc_seq_struct('d', seq) }}, false)
                {%- endif %})
                {%- if before_truncate %} and not coalesce({{ before_truncate }}, false){% endif %} as _cdc_same_seq,
            {#- a key's newest change is a delete and the key has a tombstone:
                the tombstones then take the batch's deletes by a merge, not an
                insert (_cdc_apply_batch) -#}
            {{ 'coalesce(s._cdc_rank = 1 and s._cdc_is_delete and d.`' ~ keys[0] ~ '` is not null, false)'
               if reads_tombstones else 'false' }} as _cdc_tombstoned,
            {%- if run['resolve'] %}
            {#- partial updates, and soft deletes that take their values from
                the changes before them (_cdc_partial_updates,
                run['resolve']): the newest sequence a change of the key
                must pass to give a value (stored row, tombstone, truncate;
                for a key neither stored nor tombstoned, the horizon's
                newest forgotten delete), and whether the key has a live
                row, or any row, before the batch's changes -#}
            {%- set passed = ['case when t._cdc_present then ' ~ t_seq ~ ' end']
                             + (['case when ' ~ tombstone ~ ' then ' ~ d_seq ~ ' end'] if reads_tombstones else [])
                             + (['case when ' ~ unknown_key ~ ' then h.newest end'] if unknown_key else []) %}
            case when s._cdc_rank = 1 then {{ 'greatest(' ~ passed | join(', ') ~ ')' if passed | length > 1
                                              else passed[0] }} end as _cdc_boundary,
            {#- (a change with a truncate's own sequence is ordered after it;
                typed even when no truncate can be: Parquet has no void type) -#}
            case when s._cdc_rank = 1 then {{ newest_truncate if truncated else 'case when false then ' ~ s_seq ~ ' end' }}
                end as _cdc_truncated,
            coalesce(s._cdc_rank = 1 and not {{ stored_gone }}, false) as _cdc_live,
            {#- (whether the table holds a row of the key, live or not) -#}
            coalesce(s._cdc_rank = 1 and t._cdc_present, false) as _cdc_stored,
            {%- endif %}
            {%- if run['carry'] %}
            {#- soft mode, a key's newest change a delete: it writes the values
                of the key's newest insert or update if that is newer than
                the stored row and the newest truncate
                (_cdc_soft_delete_values) -#}
            coalesce(s._cdc_rank = 1 and s._cdc_is_delete and s._cdc_carry is not null
                     and (t._cdc_present is null or s._cdc_carry._cdc_seq > {{ t_seq }})
                     {%- if truncated %} and not coalesce(s._cdc_carry._cdc_seq < {{ newest_truncate }}, false){% endif %},
                     false) as _cdc_carries,
            {%- endif %}
            {%- if run['toast'] %}
            {#- the columns the MERGE keeps as stored: those the change did not
                carry, and those filled from a change older than the stored row -#}
            case when t._cdc_present then array_union(s._cdc_unavailable, map_keys(map_filter(s._cdc_filled_from,
                    (c, q) -> q <= {{ _cdc_seq_struct('t', seq) }})))
                else s._cdc_unavailable end as _cdc_keep_stored,
            {%- endif %}
            coalesce(s._cdc_reason
                {%- if late_beyond or unsent %},
                case
                    {%- if late_beyond %}
                    when {{ late_beyond }}
                        then 'late_beyond_retention: older than a delete forgotten after cdc_tombstone_retention_hours'
                    {%- endif %}
                    {%- if unsent %}
                    when {{ unsent }} then concat('unavailable_value: ', array_join({{ unsent_columns }}, ', '),
                        ' (the source did not send it, unchanged, and no live row of the key holds it: none'
                        ' stored, or one a delete or truncate removed)')
                    {%- endif %}
                end
                {%- endif %}) as _cdc_final_reason
        from ranked as s
        {#- the stored rows of the batch's keys only: the files holding
            none of them skipped (the key list, _cdc_batch_keys), or
            without a list the table scanned, not shuffled (the batch's
            keys are the small side of a semi join; null-safe, like the
            join: a change log stores events with a null key); a small
            table whole; none in the first run, whose table this run
            created empty (Spark then drops the join: the table is not
            read nor broadcast, a Spark job) #}
        left join (
            select {{ key_list }}, {{ seq_list }}, true as _cdc_present
                {{- ', is_deleted as _cdc_stored_deleted' if stored_deleted }}
            from {{ target }} as k
            {%- if keys_in %}
            where {{ keys_in }}
            {%- elif filtered %}
            where exists (
                select 1 from ranked as r
                where r._cdc_rank = 1
                    {%- for key in keys %} and k.`{{ key }}` <=> r.`{{ key }}`{% endfor %}
            )
            {%- elif run['initial'] %}
            where false
            {%- endif %}
        ) as t
            on s._cdc_rank = 1 and {{ key_join | join(' and ') }}
        {%- if reads_tombstones %}
        left join (
            select * from {{ run['tombstones'] }} as k
            {%- if keys_in %}
            where {{ keys_in }}
            {%- endif %}
        ) as d
            on s._cdc_rank = 1 and {{ key_join | join(' and ') | replace('t.`', 'd.`') }}
        {%- endif %}
        {%- if reads_horizon %}
        cross join (
            select
                max(case when p.`{{ keys[0] }}` is not null then {{ _cdc_seq_struct('p', seq) }} end) as newest,
                max(case when p.`{{ keys[0] }}` is null then {{ _cdc_seq_struct('p', seq) }} end) as truncated
            from {{ run['horizon'] }} as p
        ) as h
        {%- endif %}
        {#- where no row can be an applicable truncate (cdc_config), the
            batch's newest truncate is not computed (a second pass) -#}
        {%- if can_truncate %}
        cross join (
            select max({{ _cdc_seq_struct('r', seq) }}) as truncated
            from ranked as r
            where r._cdc_is_truncate and r._cdc_reason is null and not r._cdc_held
        ) as b
        {%- endif %}
    {%- endset -%}
    {%- if run['changes'] -%}
        {#- cdc_keep_changes: the first copy of each change the log keeps, by
            key and sequence (_cdc_copy = 1, null for a row it does not
            keep), ranked here so that the log's MERGE reads a filter over
            the batch's files (_cdc_keep_changes) -#}
        {%- set batch_sql -%}
            select *,
                case when {{ _cdc_kept() }} then row_number() over (
                    partition by {{ _cdc_kept() }}, `{{ _cdc_changes_keys(cfg) | join('`, `') }}`
                    order by _cdc_file, _cdc_row) end as _cdc_copy
            from ({{ batch_sql }}) as outcomes
        {%- endset -%}
    {%- endif -%}
    {%- do _cdc_scratch_write(run['schema'], batch, batch_sql, folder=batch ~ '/rows') -%}
    {%- if not run['initial'] and run['adaptive'] -%}
        {%- do run_query('drop view if exists ' ~ ranked) -%}
    {%- endif -%}

    {%- set counts = _cdc_batch_counts(run) -%}
    {%- if counts['ties'] > 0 -%}
        {%- set ties -%}
            select distinct to_json(named_struct(
                {%- for key in keys %}'{{ key }}', `{{ key }}`, {% endfor -%}
                {%- for column in seq %}'{{ column }}', `{{ column }}`{{ ', ' if not loop.last }}{% endfor -%}
            )) as tie
            from {{ batch }}
            where _cdc_tie
            limit 20
        {%- endset -%}
        {%- do _cdc_fail_on_ties(run, run_query(ties).rows, 'different changes with the same sequence') -%}
    {%- endif -%}
    {%- if counts['same_seq'] > 0 -%}
        {%- do _cdc_fail_on_ties(run, run_query(_cdc_stored_ties_sql(run)).rows,
                                 'a change with the same sequence as the row the table holds (or as its delete) that does not repeat it') -%}
    {%- endif -%}
    {%- do _cdc_check_undeclared_columns(run, counts) -%}
    {{ return(counts) }}
{% endmacro %}

{#- Fail the run, before anything is written, on `tie_rows` (a key and
    sequence as JSON each): which change is last cannot be decided. -#}
{% macro _cdc_fail_on_ties(run, tie_rows, what) %}
    {%- if tie_rows | length > 0 -%}
        {%- do _cdc_scratch_drop(run['schema'], run['batch']) -%}
        {%- do exceptions.raise_compiler_error(
            "model '" ~ model.name ~ "': " ~ tie_rows | length ~ (" or more" if tie_rows | length == 20 else "")
            ~ " key(s) have " ~ what ~ " (" ~ run['cfg']['sequence_by'] | join(', ')
            ~ "), so which one is last cannot be decided: " ~ tie_rows | map(attribute=0) | join('; ')
            ~ ". Nothing was applied. Add a column that breaks the tie to cdc_sequence_by, or correct the "
            ~ "source files (a corrected file is read again).") -%}
    {%- endif -%}
{% endmacro %}
