{#
    Full-history SCD2 versions of one entity, built from change logs.

    entity_key     the business key shared by all sources (e.g. customer_id)
    sources        list of {'relation': ref('..._log'), 'columns': [...]}; the
                   first source decides whether the entity exists (its
                   deletes end it); the others only contribute attributes
                   (their deletes make those attributes null; while the entity
                   is deleted every attribute is null)
    tracked        columns whose change makes a new version (hash-diff)
    surrogate_key  name of the surrogate key column

    Every change in a log is an event; the state of each source at an event
    is its last change up to then (histories joined on time). Changes sharing
    a commit time, and the whole full load, collapse to the last one by
    sequence (the intermediate states were never visible). A delete of the first source starts a
    deleted-marker version (is_deleted, attributes null), so a key's versions
    have no gaps; is_current is true only for the open version of a live key.
    A truncate of a source (a log row with op T and a null key) is a delete,
    at its time, of every key with an earlier change in that source. A new version starts whenever the hash of
    the tracked columns (and existence) differs from the previous state, so
    changes to untracked columns make none and a late change lands where its
    commit time puts it, splitting the interval it falls in. On an
    incremental run only entities with log rows loaded since the last build
    are recomputed (whole history per entity, replaced by `replace_by_key`;
    in a run or a build, named in its SQL as constants when they are few:
    `_scd2_affected_list`);
    when no log has a row loaded since, a run (not a compile) reads no more
    than that: the SQL is the table's columns and no row, marked so that
    replace_by_key runs nothing (replace_by_key_nothing_recomputed). The
    load times compared are read before the run and written into its SQL
    (`_scd2_loads`).
    Each row carries when it was written (`_dim_loaded_at`: facts re-point
    the entities rebuilt since their own last build).
    Versions from the full load start at 1900-01-01 (nothing earlier is
    known); a key's full-load rows of a later load of the same source (a
    DMS reload) are ordered at their time, as changes. The first build adds the unknown member (surrogate key '-1',
    null business key) that facts point to when no version is valid.
#}
{% macro scd2_history(entity_key, sources, tracked, surrogate_key) %}
    {%- set loads = _scd2_loads(sources) -%}
    {%- if is_incremental() and loads.changed == false -%}
        {{ return(replace_by_key_nothing_recomputed() ~ '\nselect * from ' ~ this ~ ' where false') }}
    {%- endif -%}
    {#- the entities to recompute: listed as literals when few (a run or a
        build), else the `affected` subquery -#}
    {%- set listed = _scd2_affected_list(entity_key, sources, loads) if loads.changed else none -%}
    {%- set affected = listed or ('select ' ~ entity_key ~ ' from affected') -%}
    {#- _src breaks the tie between sources changed at one instant (e.g. the
        full load), so the last row of an instant has seen all of it -#}
    {%- set order_by = '_cdc_phase, _cdc_commit_ts, _cdc_change_seq, _src' -%}
    {%- set window = 'partition by ' ~ entity_key ~ ' order by ' ~ order_by
                     ~ ' rows between unbounded preceding and current row' -%}
with
{%- if is_incremental() and not listed %}

affected as (
    {{- _scd2_affected_sql(entity_key, sources, loads) }}
),
{%- endif %}

events as (
    {%- for source in sources %}
    {%- set outer = loop %}
    select
        {{ entity_key }},
        {#- a key's full-load rows after the source's first (a DMS reload
            writes the full load again, later) are ordered by their time
            among the changes, not before every change -#}
        case when _cdc_phase = 0 and _cdc_commit_ts > min(case when _cdc_phase = 0 then _cdc_commit_ts end)
                over (partition by {{ entity_key }}) then 1 else _cdc_phase end as _cdc_phase,
        _cdc_commit_ts,
        _cdc_change_seq,
        {{ outer.index }} as _src,
        _cdc_op,
        {%- for other in sources %}
        {%- set other_index = loop.index %}
        {%- for column in other.columns %}
        {{ column if other_index == outer.index else 'null' }} as {{ column }}{{ ',' if not (loop.last and other_index == sources | length) }}
        {%- endfor %}
        {%- endfor %}
    from {{ source.relation }}
    {%- if is_incremental() %}
    where {{ entity_key }} in ({{ affected }})
    {%- else %}
    where {{ entity_key }} is not null
    {%- endif %}
    {%- if _scd2_may_truncate(loads, outer.index0) %}

    union all

    -- a truncate of the source (a log row with op T and no key) deletes
    -- every key that had a change before it
    select
        k.{{ entity_key }},
        tr._cdc_phase,
        tr._cdc_commit_ts,
        tr._cdc_change_seq,
        {{ outer.index }} as _src,
        'D' as _cdc_op,
        {%- for other in sources %}
        {%- set other_index = loop.index %}
        {%- for column in other.columns %}
        null as {{ column }}{{ ',' if not (loop.last and other_index == sources | length) }}
        {%- endfor %}
        {%- endfor %}
    from {{ source.relation }} as tr
    inner join (
        select {{ entity_key }}, min({{ _scd2_order('l') }}) as first_change
        from {{ source.relation }} as l
        where {{ entity_key }} is not null
        {%- if is_incremental() %}
            and {{ entity_key }} in ({{ affected }})
        {%- endif %}
        group by {{ entity_key }}
    ) as k on k.first_change < {{ _scd2_order('tr') }}
    where tr._cdc_op = 'T'
    {%- if is_incremental() %}
        and k.{{ entity_key }} in ({{ affected }})
    {%- endif %}
    {%- endif %}
    {{- '\n\n    union all' if not loop.last }}
    {%- endfor %}
),

states as (
    select
        {{ entity_key }},
        _cdc_phase,
        _cdc_commit_ts,
        _cdc_change_seq,
        {%- for source in sources %}
        last_value(case when _src = {{ loop.index }} then named_struct(
            'op', _cdc_op{% for column in source.columns %}, '{{ column }}', {{ column }}{% endfor %}
        ) end, true) over ({{ window }}) as _s{{ loop.index }},
        {%- endfor %}
        {#- an instant is a version's start (_scd2_valid_from): the whole
            full load is one, whenever each of its rows was stamped -#}
        row_number() over (
            partition by {{ entity_key }}, {{ _scd2_valid_from() }}
            order by _cdc_phase desc, _cdc_commit_ts desc, _cdc_change_seq desc, _src desc
        ) as _rank_in_instant
    from events
),

flat as (
    select
        {{ entity_key }},
        {{ _scd2_valid_from() }} as valid_from,
        coalesce(_s1.op != 'D', false) as _exists,
        {#- a deleted-marker version holds no attribute, whatever the other
            sources still hold: a change of theirs while the key is deleted
            makes no version -#}
        {%- for source in sources %}
        {%- set index = loop.index %}
        {%- for column in source.columns %}
        case when _s1.op != 'D'{{ " and _s" ~ index ~ ".op != 'D'" if index > 1 }} then _s{{ index }}.{{ column }} end as {{ column }}{{ ',' if not (loop.last and index == sources | length) }}
        {%- endfor %}
        {%- endfor %}
    from states
    where _rank_in_instant = 1
),

hashed as (
    select
        *,
        lag({{ hash_columns(['_exists'] + tracked) }}) over (
            partition by {{ entity_key }} order by valid_from
        ) as _previous_hash,
        {{ hash_columns(['_exists'] + tracked) }} as _hash
    from flat
),

versions as (
    select
        *,
        lead(valid_from) over (partition by {{ entity_key }} order by valid_from) as _next_from
    from hashed
    where _previous_hash is null or _hash != _previous_hash
),

existing as (
    select
        *,
        max(cast(_exists as int)) over (
            partition by {{ entity_key }} order by valid_from rows between unbounded preceding and current row
        ) as _has_existed
    from versions
),

final as (
    select
        {{ hash_columns([entity_key, 'valid_from']) }} as {{ surrogate_key }},
        {{ entity_key }},
        {%- for column in tracked %}
        {{ column }},
        {%- endfor %}
        valid_from as rec_eff_dt,
        coalesce(_next_from, timestamp '9999-12-31 00:00:00') as rec_exp_dt,
        _next_from is null and _exists as is_current,
        not _exists as is_deleted,
        {{ loads.newest }} as _dim_source_loaded_at,
        current_timestamp() as _dim_loaded_at
    from existing
    where _has_existed = 1  -- a key's time before it first existed is no version
    {%- if not is_incremental() %}

    union all

    -- the unknown member: facts whose dimension version has not arrived yet
    select
        '-1' as {{ surrogate_key }},
        null as {{ entity_key }},
        {%- for column in tracked %}
        null as {{ column }},
        {%- endfor %}
        timestamp '1900-01-01 00:00:00' as rec_eff_dt,
        timestamp '9999-12-31 00:00:00' as rec_exp_dt,
        false as is_current,
        false as is_deleted,
        null as _dim_source_loaded_at,
        timestamp '1900-01-01 00:00:00' as _dim_loaded_at
    {%- endif %}
)

select * from final
{%- if not is_incremental() %}
-- written in key order: each data file then holds a range of keys, and a
-- later run's MERGE, which filters the table by the keys it replaces
-- (replace_by_key_sql), reads only the files whose range holds one
order by {{ entity_key }}
{%- endif %}
{% endmacro %}

{#- The entities an incremental run recomputes: those with a log row
    loaded since `loads.since`, and every key of a source truncated since. -#}
{% macro _scd2_affected_sql(entity_key, sources, loads) %}
    {%- for source in sources %}
    select {{ entity_key }} from {{ source.relation }}
    where _cdc_loaded_at > {{ loads.since }}
    {%- if _scd2_may_truncate(loads, loop.index0) %}

    union

    -- a truncate loaded since: every key of its source
    select {{ entity_key }} from {{ source.relation }}
    where {{ entity_key }} is not null and (
        select count(*) from {{ source.relation }}
        where _cdc_op = 'T' and _cdc_loaded_at > {{ loads.since }}) > 0
    {%- endif %}
    {{- '\n\n    union' if not loop.last }}
    {%- endfor %}
{% endmacro %}

{#- Whether the log of source number `index` (from 0) may hold a truncate
    (a row with op T), so that the history's SQL needs the branch that
    applies it: false only when `_scd2_loads` read that it holds none. A
    truncate the log commits after that read is no older than the `newest`
    load written: the next run recomputes every key for it (a truncate
    loaded since, _scd2_affected_sql). -#}
{% macro _scd2_may_truncate(loads, index) %}
    {{ return(loads.truncated is none or loads.truncated[index]) }}
{% endmacro %}

{#- The affected entities (_scd2_affected_sql) as a list of SQL literals,
    read before the run like the loads: the run's SQL then filters the logs
    by constants, which Spark checks as it scans them, instead of joining
    every log row to a subquery it computes in the same statement (measured
    2026-12-06, a 10M-row log, ten products changed: its recompute 1.4 s
    against 6.3 s). None (the subquery) when there are more than
    cdc_key_list_max, or one no literal finds (_cdc_key_literal), or none
    (a NULL key, as a truncate's, is no entity), or the sources' key columns
    are not all of one type (a literal is written for one type: a string
    key '0042' written as an integer would find 42). -#}
{% macro _scd2_affected_list(entity_key, sources, loads) %}
    {%- set types = [] -%}
    {%- for source in sources -%}
        {%- set column = adapter.get_columns_in_relation(source.relation)
                         | selectattr('name', 'equalto', entity_key) | first -%}
        {%- do types.append((column.data_type | lower) if column else none) -%}
    {%- endfor -%}
    {%- if types | unique | list | length != 1 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set affected -%}
        select * from ({{ _scd2_affected_sql(entity_key, sources, loads) }}) as a
        where `{{ entity_key }}` is not null
    {%- endset -%}
    {{ return(_cdc_key_literal_list(entity_key, types[0], affected)['list']) }}
{% endmacro %}

{#- The log loads an incremental run compares: `since`, the newest log
    load the table has seen (1900-01-01 when none), `newest`, the newest row
    of the logs, `changed`, whether `newest` is the later, and `truncated`,
    whether each source's log holds a truncate (_scd2_may_truncate; read
    only when `changed`). When
    dbt runs the model incrementally (run, build; not a unit test) they are
    read first (the loads in one query, the truncates in a second) and
    written into its SQL as constants: Iceberg
    skips the logs' files loaded before `since` for a constant, never for a
    subquery (as microseconds since the epoch: no time zone or date format
    between the read and the SQL). Otherwise (a first build, compile, docs)
    they are subqueries and `changed` and `truncated` are none. A row a log commits after
    the read has its key recomputed now or by the next run (the `since`
    bound is open, and its load is not older than the `newest` written as
    long as writers of the logs and this table take turns: the DAG, the
    build lock). -#}
{% macro _scd2_loads(sources) %}
    {%- set newest -%}
        select max(loaded_at) from (
            {%- for source in sources %}
            select max(_cdc_loaded_at) as loaded_at from {{ source.relation }}
            {{- '\n            union all' if not loop.last }}
            {%- endfor %}
        ) as per_source
    {%- endset -%}
    {%- set since -%}
        select {% if is_incremental() -%}
            coalesce(max(_dim_source_loaded_at), timestamp '1900-01-01 00:00:00') from {{ this }}
        {%- else -%}
            timestamp '1900-01-01 00:00:00'
        {%- endif %}
    {%- endset -%}
    {%- if not (execute and is_incremental() and flags.WHICH in ('run', 'build')
                and model.resource_type != 'unit_test') -%}
        {{ return({'newest': '(' ~ newest ~ ')', 'since': '(' ~ since ~ ')', 'changed': none,
                   'truncated': none}) }}
    {%- endif -%}
    {#- `since` from the upper bounds Iceberg keeps for the column in each
        data file's metadata (_scd2_since_from_bounds); the table scanned
        only when a file has values but no bound -#}
    {%- set read -%}
        select unix_micros(newest), unix_micros(since)
        from ({{ newest }}) as n (newest) cross join ({{ _scd2_since_from_bounds() }}) as s (since)
    {%- endset -%}
    {%- set loaded = run_query(read).rows[0] -%}
    {%- set newest_micros, since_micros = loaded[0], loaded[1] -%}
    {%- if since_micros is none -%}
        {%- do log(model.name ~ ': a data file of ' ~ this ~ ' has no upper bound for _dim_source_loaded_at '
                   ~ '(column metrics off, or beyond the columns Iceberg keeps them for): scanning the table '
                   ~ 'for its newest applied load', info=true) -%}
        {%- set since_micros = run_query('select unix_micros((' ~ since ~ '))').rows[0][0] -%}
    {%- endif -%}
    {%- set row = [newest_micros, since_micros, newest_micros is not none and newest_micros > since_micros] -%}
    {#- whether each log holds a truncate: read only for a run that
        recomputes (a scan of every log's op column) -#}
    {%- set truncated = none -%}
    {%- if row[2] -%}
        {%- set read -%}
            select
            {%- for source in sources %}
                (select count(*) from {{ source.relation }} where _cdc_op = 'T') > 0
                    as truncated_{{ loop.index }}{{ ',' if not loop.last }}
            {%- endfor %}
        {%- endset -%}
        {%- set truncated = run_query(read).rows[0] | list -%}
    {%- endif -%}
    {{ return({
        'newest': 'cast(null as timestamp)' if row[0] is none else 'timestamp_micros(' ~ row[0] | int ~ ')',
        'since': 'timestamp_micros(' ~ row[1] | int ~ ')',
        'changed': row[2],
        'truncated': truncated}) }}
{% endmacro %}

{#- The newest log load the incremental table has seen (`since` of
    _scd2_loads, 1900-01-01 when it holds none), from the upper bounds of
    `_dim_source_loaded_at` that Iceberg keeps for each data file: no scan
    of the table (Iceberg does not answer the maximum from them itself
    once the table has delete files, as a merge-on-read dimension does).
    A bound may come from a row deleted since (a file's rows deleted by
    position keep the file); every row was written by a run that had
    applied the logs up to the time it carries, so the maximum is never
    past what the table has applied, only sometimes later than its live
    rows' maximum (fewer keys recomputed, none missed). Null when a file
    holds values without a bound (metrics off, or beyond the columns
    Iceberg keeps them for): the caller then scans. -#}
{%- macro _scd2_since_from_bounds() -%}
    select case when count_if(m.upper_bound is null
                              and coalesce(m.null_value_count, -1) < f.record_count) = 0
                then coalesce(max(m.upper_bound), timestamp '1900-01-01 00:00:00') end
    from (select readable_metrics._dim_source_loaded_at as m, record_count from {{ this }}.data_files) as f
{%- endmacro %}

{%- macro _scd2_order(alias) -%}
    named_struct('p', {{ alias }}._cdc_phase, 't', {{ alias }}._cdc_commit_ts, 's', {{ alias }}._cdc_change_seq)
{%- endmacro %}

{#- When a change's state starts: its commit time, and for the full load the
    start of time (nothing is known before it, so facts older than the load
    find its versions; DMS stamps each full-load row when it is copied, so
    the tables of one entity carry different times). -#}
{%- macro _scd2_valid_from() -%}
    case when _cdc_phase = 0 then timestamp '1900-01-01 00:00:00' else _cdc_commit_ts end
{%- endmacro %}
