{#
    Apply one batch of change rows (`source`, a view of the model's SQL) to
    the silver table `target`. Called by the cdc_merge strategy on every run,
    including the first (`initial`: the table is created empty first).

    Order of work, and why a crash anywhere is safe:
      1. write the batch once to scratch Parquet files (_cdc_scratch), with
         each row's reject reason, delete flag and content hash (the files
         to read were listed and frozen by cdc_changes: _cdc_new_files);
      2. fail, before writing anything, if a file's rows did not all arrive
         (row conservation) or on ties the sequence cannot break;
      3. decide every row's outcome, each by its own rule: quarantined,
         superseded (a later change of its key in the batch, or not newer
         than the stored row / the tombstone) or applied; the three counts
         must add up to the rows read;
      4. quarantine bad rows       (merge on model+file+row: re-runs add nothing);
      5. record hard deletes as tombstones (merge keeping the newest:
         idempotent), then merge the applied changes (a change equal to what
         is stored is a no-op);
      6. log every listed file (applied with its counts, or ignored) and
         write the run's audit row.
    A crash before 6 leaves the files unlogged, so the re-run reads them again
    and steps 4-5 change nothing they already did. A run that finds no new
    file (not even a non-data one) does none of this: it writes nothing, not
    even an audit row.
#}
{% macro cdc_apply(source, target, initial) %}
    {%- set cfg = cdc_config() -%}
    {%- set source_columns = adapter.get_columns_in_relation(source) -%}
    {%- set names = source_columns | map(attribute='name') | list -%}
    {%- do cdc_config(check_columns=names) -%}
    {#- nothing new landed for this model: nothing to read, write or log -#}
    {#- the listing of this run's new files and the Debezium event counts,
        temporary views made by cdc_changes (_cdc_new_files) -#}
    {%- set listed = this.identifier ~ '__cdc_files' -%}
    {%- set events = this.identifier ~ '__cdc_events' -%}
    {%- set views = run_query("show tables like '" ~ listed ~ "|" ~ events ~ "'").columns[1].values() | list -%}
    {%- set listed_exists = listed | lower in views -%}
    {%- set events_exist = events | lower in views -%}
    {%- if not initial and listed_exists and run_query('select count(*) from ' ~ listed).rows[0][0] == 0 -%}
        {%- do run_query('drop view if exists ' ~ listed) -%}
        {%- do log('cdc ' ~ model.name ~ ': no new files', info=true) -%}
        {{ return('select 0 as no_new_files') }}
    {%- endif -%}
    {%- set transient = cdc_column_names('transient') -%}
    {%- set data_columns = [] -%}
    {%- for column in source_columns if column.name not in transient -%}
        {%- do data_columns.append(column) -%}
    {%- endfor -%}
    {%- set soft = cfg['delete_mode'] == 'soft' -%}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set schema = target.schema -%}
    {%- set tombstones = schema ~ '.' ~ target.identifier ~ '__cdc_tombstones' -%}
    {%- set horizon = schema ~ '.' ~ target.identifier ~ '__cdc_horizon' -%}
    {#- the batch is written once to scratch files (_cdc_scratch): its row
        numbers come from a non-deterministic function, which Spark refuses
        as a MERGE source, and it is read by every step below -#}
    {%- set batch = target.identifier ~ '__cdc_batch' -%}
    {%- set provenance = ['_cdc_file', '_cdc_row', '_cdc_file_modified_at'] -%}

    {%- do _cdc_ensure_log_tables(schema) -%}

    {#- 0. first run / full refresh: an empty table with the model's columns -#}
    {%- if initial -%}
        {%- do run_query('drop table if exists ' ~ target) -%}
        {%- set ddl -%}
            create table {{ target }} (
                {%- for column in data_columns %}
                `{{ column.name }}` {{ column.data_type }},
                {%- endfor %}
                {%- if soft %}
                is_deleted boolean,
                deleted_at timestamp,
                {%- endif %}
                _cdc_loaded_at timestamp,
                _cdc_run_id string
            )
            using iceberg
            {{ partition_cols(label='partitioned by') }}
            tblproperties (
                'format-version' = '2',
                'write.merge.mode' = '{{ cfg['write_mode'] }}',
                'write.update.mode' = '{{ cfg['write_mode'] }}',
                'write.delete.mode' = '{{ cfg['write_mode'] }}'
            )
        {%- endset -%}
        {%- do run_query(ddl) -%}
        {%- do run_query('alter table ' ~ target ~ ' write ordered by ' ~ keys | join(', ')) -%}
        {%- do run_query('drop table if exists ' ~ tombstones) -%}
        {%- do run_query('drop table if exists ' ~ horizon) -%}
        {%- do run_query('delete from ' ~ schema ~ '.cdc_file_log where model_name = ' ~ sql_string(model.name)) -%}
    {%- else -%}
        {%- do _cdc_evolve_schema(target, data_columns) -%}
    {%- endif -%}
    {%- set target_columns = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}

    {#- 1. the batch, read once and written once to scratch files with every
        row's outcome. Rows of files held back (e.g. cut mid-row) are kept
        apart: neither applied nor quarantined nor logged. -#}
    {#- a truncate event carries no key: applied as a truncate, or (a change
        log, cdc_truncate_when false) kept as an event with a null key -#}
    {%- set is_truncate = 'coalesce(' ~ cfg['truncate_when'] ~ ', false)' -%}
    {%- set keyless = '(' ~ is_truncate ~ ' or `' ~ cfg['operation_column'] ~ "` <=> 'T')" -%}
    {#- where no row can be an applicable truncate (cdc_config), the batch's
        newest truncate is not computed (a second pass over the batch) -#}
    {%- set can_truncate = cfg['can_truncate'] -%}
    {%- set checks -%}
        case
            {%- for key in keys %}
            when `{{ key }}` is null and not {{ keyless }} then 'missing_key: {{ key }}'
            {%- endfor %}
            when `{{ cfg['operation_column'] }}` is null
                or `{{ cfg['operation_column'] }}` not in ('{{ cfg['operations'] | join("', '") }}')
                then concat('unknown_op: ', coalesce(`{{ cfg['operation_column'] }}`, 'null'))
            {%- for column in seq %}
            when `{{ column }}` is null then 'missing_sequence: {{ column }}'
            {%- endfor %}
        end
    {%- endset -%}
    {%- set hashed = [] -%}
    {%- for column in data_columns if column.name not in provenance -%}
        {%- do hashed.append('`' ~ column.name ~ '`') -%}
    {%- endfor -%}
    {%- if '_cdc_extra' in names -%}{%- do hashed.append('_cdc_extra') -%}{%- endif -%}
    {%- set held = '_cdc_file_held is not null' if '_cdc_file_held' in names else 'false' -%}
    {%- set key_list = '`' ~ keys | join('`, `') ~ '`' -%}
    {%- set seq_list = '`' ~ seq | join('`, `') ~ '`' -%}
    {%- set key_join = [] -%}
    {%- for key in keys -%}{%- do key_join.append('t.`' ~ key ~ '` <=> s.`' ~ key ~ '`') -%}{%- endfor -%}
    {#- tombstones keep hard deletes; a change log (delete_when false) has none -#}
    {%- set has_tombstones = not soft and cfg['delete_when'] | string | trim | lower != 'false' -%}
    {%- set tomb_ddl -%}
            create table if not exists {{ tombstones }} (
                {%- for column in data_columns if column.name in keys or column.name in seq %}
                `{{ column.name }}` {{ column.data_type }},
                {%- endfor %}
                _cdc_recorded_at timestamp
            ) using iceberg tblproperties ('format-version' = '2')
    {%- endset -%}
    {%- if has_tombstones -%}
        {%- do run_query(tomb_ddl) -%}
    {%- endif -%}
    {#- the horizon: purged tombstones (the newest of them: older changes of
        keys the table does not hold may be echoes of a forgotten delete) and
        applied truncates (null keys: every older change is gone) -#}
    {%- do run_query(tomb_ddl | replace(tombstones, horizon)) -%}
    {%- set rows = 'select * from src' -%}
    {%- set toast = '_cdc_unavailable' in names and _cdc_source_format() == 'debezium' -%}
    {%- if toast -%}
        {%- set fillable = [] -%}
        {%- for column in data_columns if column.name not in keys and column.name not in seq
                                         and not column.name.startswith('_cdc_') -%}
            {%- do fillable.append(column.name) -%}
        {%- endfor -%}
        {%- set batch_columns = names + ['_cdc_held', '_cdc_reason', '_cdc_is_delete', '_cdc_is_truncate', '_cdc_row_hash'] -%}
        {%- set rows = _cdc_fill_unavailable('src', batch_columns, fillable, keys, seq) -%}
    {%- endif -%}
    {%- set batch_sql -%}
        with src as (
            select
                *,
                {{ held }} as _cdc_held,
                {{ 'coalesce(_cdc_reject_reason, ' ~ checks ~ ')' if '_cdc_reject_reason' in names else checks }} as _cdc_reason,
                coalesce({{ cfg['delete_when'] }}, false) as _cdc_is_delete,
                {{ is_truncate }} as _cdc_is_truncate,
                sha2(to_json(struct({{ hashed | join(', ') }})), 256) as _cdc_row_hash
            from {{ source }}
        ),

        ranked as (
            select
                *,
                case when _cdc_reason is null and not _cdc_held and not _cdc_is_truncate then row_number() over (
                    partition by _cdc_reason is null and not _cdc_held and not _cdc_is_truncate, {{ key_list }}
                    order by {% for column in seq %}`{{ column }}` desc, {% endfor %}_cdc_file, _cdc_row
                ) end as _cdc_rank
            from ({{ rows }}) as batch_rows
        )

        {#- 3. (decided here, applied below) every row's outcome, each by its
            own rule: quarantined (a reason), superseded (a later change of
            its key in the batch, or not newer than the stored row or the
            tombstone), or applied -#}
        select
            s.*,
            case
                when s._cdc_held then 'held'
                when s._cdc_reason is not null then 'quarantined'
                {#- a truncate is applied unless an applied one is newer; a
                    change older than the newest truncate is gone with it -#}
                when s._cdc_is_truncate then
                    case when h.truncated is null or {{ _cdc_seq_struct('s', seq) }} >= h.truncated
                        then 'applied' else 'superseded' end
                when {{ _cdc_seq_struct('s', seq) }} < {{ 'greatest(h.truncated, b.truncated)' if can_truncate else 'h.truncated' }}
                    then 'superseded'
                when s._cdc_rank > 1 then 'superseded'
                {%- if has_tombstones %}
                when t._cdc_present is null and d.`{{ keys[0] }}` is null
                    and {{ _cdc_seq_struct('s', seq) }} <= h.newest then 'quarantined'
                {%- endif %}
                when (t._cdc_present is null or {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }})
                    {%- if has_tombstones %}
                    and (d.`{{ keys[0] }}` is null or {{ _cdc_seq_struct('s', seq) }} >= {{ _cdc_seq_struct('d', seq) }})
                    {%- endif %}
                    then 'applied'
                else 'superseded'
            end as _cdc_outcome,
            coalesce(s._cdc_reason
                {%- if has_tombstones %},
                case when s._cdc_rank = 1 and t._cdc_present is null and d.`{{ keys[0] }}` is null
                    and {{ _cdc_seq_struct('s', seq) }} <= h.newest
                    then 'late_beyond_retention: older than a delete forgotten after cdc_tombstone_retention_hours'
                end
                {%- endif %}) as _cdc_final_reason
        from ranked as s
        left join (select {{ key_list }}, {{ seq_list }}, true as _cdc_present from {{ target }}) as t
            on s._cdc_rank = 1 and {{ key_join | join(' and ') }}
        {%- if has_tombstones %}
        left join {{ tombstones }} as d
            on s._cdc_rank = 1 and {{ key_join | join(' and ') | replace('t.`', 'd.`') }}
        {%- endif %}
        cross join (
            select
                max(case when p.`{{ keys[0] }}` is not null then {{ _cdc_seq_struct('p', seq) }} end) as newest,
                max(case when p.`{{ keys[0] }}` is null then {{ _cdc_seq_struct('p', seq) }} end) as truncated
            from {{ horizon }} as p
        ) as h
        {%- if can_truncate %}
        cross join (
            select max({{ _cdc_seq_struct('r', seq) }}) as truncated
            from ranked as r
            where r._cdc_is_truncate and r._cdc_reason is null and not r._cdc_held
        ) as b
        {%- endif %}
    {%- endset -%}
    {%- do _cdc_scratch_write(schema, batch, batch_sql) -%}

    {#- 2. row conservation, then ties the sequence cannot break (nothing written yet) -#}
    {%- if '_cdc_file_rows' in names -%}
        {%- do _cdc_check_conservation(schema, batch) -%}
    {%- endif -%}
    {%- set ties -%}
        select to_json(named_struct(
            {%- for key in keys %}'{{ key }}', `{{ key }}`, {% endfor -%}
            {%- for column in seq %}'{{ column }}', `{{ column }}`{{ ', ' if not loop.last }}{% endfor -%}
        )) as tie
        from {{ batch }}
        where _cdc_reason is null and not _cdc_held
        group by {{ key_list }}, {{ seq_list }}
        having count(distinct _cdc_row_hash) > 1
        limit 20
    {%- endset -%}
    {%- set tie_rows = run_query(ties).rows -%}
    {%- if tie_rows | length > 0 -%}
        {%- do _cdc_scratch_drop(schema, batch) -%}
        {%- do exceptions.raise_compiler_error(
            "model '" ~ model.name ~ "': " ~ tie_rows | length ~ (" or more" if tie_rows | length == 20 else "")
            ~ " key(s) have different changes with the same sequence (" ~ seq | join(', ')
            ~ "), so which one is last cannot be decided: " ~ tie_rows | map(attribute=0) | join('; ')
            ~ ". Add a column that breaks the tie to cdc_sequence_by, or correct the source files.") -%}
    {%- endif -%}

    {%- set per_file -%}
        select
            _cdc_file as file_path,
            count(*) as rows_read,
            count_if(_cdc_outcome = 'applied') as rows_applied,
            count_if(_cdc_outcome = 'superseded') as rows_superseded,
            count_if(_cdc_outcome = 'quarantined') as rows_quarantined
        from {{ batch }}
        where not _cdc_held
        group by _cdc_file
    {%- endset -%}
    {#- the run's counts, by name (held rows are neither read nor counted) -#}
    {%- set totals -%}
        select
            count_if(not _cdc_held) as `read`,
            count_if(_cdc_outcome = 'applied') as applied,
            count_if(_cdc_outcome = 'superseded') as superseded,
            count_if(_cdc_outcome = 'quarantined') as quarantined,
            count(distinct case when not _cdc_held then _cdc_file end) as files,
            count(distinct case when _cdc_held then _cdc_file end) as held_files,
            count_if(_cdc_rank = 1 and _cdc_is_delete) as deletes,
            count_if(_cdc_outcome = 'applied' and _cdc_is_truncate) as truncates,
            {{ '(select count(*) from ' ~ listed ~ ' where not is_data)' if listed_exists else '0' }} as ignored_files,
            {{ "array_join(array_sort(array_distinct(flatten(collect_list(case when _cdc_outcome = 'applied' "
               ~ "then map_keys(_cdc_extra) end)))), ',')" if '_cdc_extra' in names else "''" }} as undeclared
        from {{ batch }}
    {%- endset -%}
    {%- set result = run_query(totals) -%}
    {%- set counts = {} -%}
    {%- for name in result.column_names -%}
        {%- do counts.update({name: result.rows[0][name]}) -%}
    {%- endfor -%}
    {%- set truncates = counts['truncates'] -%}
    {%- if counts['read'] != counts['applied'] + counts['superseded'] + counts['quarantined'] -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': " ~ counts['read'] ~ " rows read, but "
            ~ counts['applied'] ~ " applied + " ~ counts['superseded'] ~ " superseded + " ~ counts['quarantined']
            ~ " quarantined: rows would be lost. Nothing was applied.") -%}
    {%- endif -%}

    {#- 4. quarantine (merge on model+file+row: re-runs add nothing) -#}
    {%- if counts['quarantined'] > 0 -%}
        {%- set quarantine -%}
            merge into {{ schema }}.cdc_quarantine as q
            using (
                select
                    {{ sql_string(model.name) }} as model_name,
                    '{{ invocation_id }}' as run_id,
                    _cdc_file as file_path,
                    cast(_cdc_row as bigint) as row_number,
                    _cdc_final_reason as reason,
                    {{ '_cdc_raw' if '_cdc_raw' in names else 'to_json(struct(' ~ _cdc_quoted(names) ~ '))' }} as record,
                    current_timestamp() as quarantined_at
                from {{ batch }}
                where _cdc_outcome = 'quarantined'
            ) as s
            on q.model_name = s.model_name and q.file_path = s.file_path and q.row_number = s.row_number
            when not matched then insert *
        {%- endset -%}
        {%- do run_query(quarantine) -%}
    {%- endif -%}

    {#- 5. tombstones for hard deletes (merge keeping the newest: idempotent),
        expired ones purged; then the merge of the applied changes -#}
    {%- if has_tombstones -%}
        {%- set tomb_merge -%}
            merge into {{ tombstones }} as t
            using (
                select {{ key_list }}, {{ seq_list }}, current_timestamp() as _cdc_recorded_at
                from {{ batch }}
                where _cdc_rank = 1 and _cdc_is_delete
            ) as s
            on {% for key in keys %}t.`{{ key }}` = s.`{{ key }}`{{ ' and ' if not loop.last }}{% endfor %}
            when matched and {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }} then update set *
            when not matched then insert *
        {%- endset -%}
        {#- only commit when there is something to write: a run without
            deletes (or without files) leaves the tombstone table alone -#}
        {%- if counts['deletes'] > 0 -%}
            {%- do run_query(tomb_merge) -%}
        {%- endif -%}
        {%- set expired = '_cdc_recorded_at < current_timestamp() - make_dt_interval(0, '
                          ~ cfg['tombstone_retention_hours'] ~ ')' -%}
        {%- if run_query('select count(*) from ' ~ tombstones ~ ' where ' ~ expired).rows[0][0] > 0 -%}
            {%- do run_query('insert into ' ~ horizon ~ ' select * from ' ~ tombstones ~ ' where ' ~ expired) -%}
            {%- do run_query('delete from ' ~ tombstones ~ ' where ' ~ expired) -%}
        {%- endif -%}
    {%- endif -%}
    {%- set evolved = {'added': [], 'columns': []} -%}
    {%- if '_cdc_extra' in names -%}
        {%- set evolved = _cdc_add_undeclared_columns(target, data_columns, (counts['undeclared'] or '').split(',') | reject('equalto', '') | list) -%}
    {%- endif -%}
    {%- if truncates > 0 -%}
        {%- do _cdc_apply_truncate(target, batch, horizon, cfg, data_columns) -%}
    {%- endif -%}
    {%- if counts['applied'] > truncates -%}
        {%- set to_apply = '(select * from ' ~ batch ~ " where _cdc_outcome = 'applied' and not _cdc_is_truncate)" -%}
        {%- do run_query(_cdc_merge_sql(target, to_apply, cfg, data_columns, target_columns + evolved['added'], toast,
                                        evolved['columns'])) -%}
    {%- endif -%}

    {#- 6. file log (every listed file: read, or ignored as not data; held
        files are not logged, so the next run reads them again) and audit -#}
    {%- if not listed_exists -%}
        {#- a model that does not read through cdc_changes(): the files it read -#}
        {%- set listed = '(select _cdc_file as file_path, max(_cdc_file_modified_at) as file_modified_at, '
                         ~ 'cast(null as bigint) as file_size, true as is_data from ' ~ batch ~ ' group by _cdc_file)' -%}
    {%- endif -%}
    {%- set file_log -%}
        insert into {{ schema }}.cdc_file_log
            (model_name, file_path, file_modified_at, row_count, applied_at, run_id, status, file_size,
             rows_in_file, rows_applied, rows_superseded, rows_quarantined, events_skipped)
        select
            {{ sql_string(model.name) }}, f.file_path, f.file_modified_at, coalesce(c.rows_read, 0),
            current_timestamp(), '{{ invocation_id }}',
            case when f.is_data then 'applied' else 'ignored' end, f.file_size,
            case when f.is_data then coalesce(r.rows_in_file, 0) end,
            coalesce(c.rows_applied, 0), coalesce(c.rows_superseded, 0), coalesce(c.rows_quarantined, 0),
            {{ 'coalesce(e.events_skipped, 0)' if events_exist else '0' }}
        from {{ listed }} as f
        left join ({{ per_file }}) as c on f.file_path = c.file_path
        left join (
            select _cdc_file, {{ 'max(_cdc_file_rows)' if '_cdc_file_rows' in names else 'count(*)' }} as rows_in_file,
                bool_or(_cdc_held) as held
            from {{ batch }} group by _cdc_file
        ) as r on f.file_path = r._cdc_file
        {%- if events_exist %}
        left join {{ events }} as e on f.file_path = e.file_path
        {%- endif %}
        where not coalesce(r.held, false)
    {%- endset -%}
    {%- set held_files = counts['held_files'] -%}
    {%- set ignored_files = counts['ignored_files'] -%}
    {%- do run_query(file_log) -%}
    {%- do _cdc_scratch_drop(schema, batch) -%}
    {%- if listed_exists -%}{%- do run_query('drop view if exists ' ~ listed) -%}{%- endif -%}
    {%- if events_exist -%}{%- do run_query('drop view if exists ' ~ events) -%}{%- endif -%}
    {%- set snapshot = run_query('select snapshot_id from ' ~ target ~ '.snapshots order by committed_at desc limit 1').rows -%}
    {%- do log('cdc ' ~ model.name ~ ': ' ~ counts['files'] ~ ' file(s), ' ~ counts['read'] ~ ' read, '
               ~ counts['applied'] ~ ' applied, ' ~ counts['superseded'] ~ ' superseded, '
               ~ counts['quarantined'] ~ ' quarantined'
               ~ (', ' ~ ignored_files ~ ' non-data file(s) ignored' if ignored_files else '')
               ~ (', ' ~ held_files ~ ' incomplete file(s) held back' if held_files else ''), info=true) -%}
    {%- set audit -%}
        insert into {{ schema }}.cdc_run_audit
            (model_name, run_id, run_started_at, finished_at, is_initial, files_read, rows_read, rows_applied,
             rows_superseded, rows_quarantined, snapshot_id, files_ignored, files_held)
        values (
            {{ sql_string(model.name) }}, '{{ invocation_id }}', timestamp '{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}',
            current_timestamp(), {{ 'true' if initial else 'false' }},
            {{ counts['files'] }}, {{ counts['read'] }}, {{ counts['applied'] }}, {{ counts['superseded'] }},
            {{ counts['quarantined'] }}, {{ snapshot[0][0] if snapshot | length > 0 else 'null' }},
            {{ ignored_files }}, {{ held_files }}
        )
    {%- endset -%}
    {{ return(audit) }}
{% endmacro %}

{% macro _cdc_quoted(names) -%}
    {%- for name in names -%}`{{ name }}`{{ ', ' if not loop.last }}{%- endfor -%}
{%- endmacro %}

{% macro _cdc_seq_struct(alias, columns) -%}
    named_struct({% for column in columns %}'s{{ loop.index }}', {{ alias }}.`{{ column }}`{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{#
    A truncate (Debezium op t) at its place in the order: every stored row
    older than the newest applied truncate of the batch is deleted (soft
    mode: marked deleted at the truncate's time), and the truncate is kept
    in the horizon table (null keys), so that a late change older than it
    is superseded instead of bringing a row back. Both statements are
    idempotent: a re-run after a crash does them again to the same effect.
#}
{% macro _cdc_apply_truncate(target, batch, horizon, cfg, data_columns) %}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set newest -%}
        select max_by(named_struct(
            {%- for column in seq %}'{{ column }}', `{{ column }}`, {% endfor -%}
            '_deleted_at', `{{ cfg['deleted_at_column'] }}`), {{ _cdc_seq_struct('b', seq) }}) as tr
        from {{ batch }} as b
        where b._cdc_outcome = 'applied' and b._cdc_is_truncate
    {%- endset -%}
    {%- set older -%}
        {{ _cdc_seq_struct('t', seq) }} < named_struct(
            {%- for column in seq %}'s{{ loop.index }}', s.tr.`{{ column }}`{{ ', ' if not loop.last }}{% endfor -%})
    {%- endset -%}
    {%- set wipe -%}
        merge into {{ target }} as t
        using ({{ newest }}) as s
        on {{ older }}
        {%- if cfg['delete_mode'] == 'soft' %}
        when matched and not t.is_deleted then update set
            t.is_deleted = true,
            t.deleted_at = s.tr._deleted_at,
            t._cdc_loaded_at = current_timestamp(),
            t._cdc_run_id = '{{ invocation_id }}'
        {%- else %}
        when matched then delete
        {%- endif %}
    {%- endset -%}
    {%- do run_query(wipe) -%}
    {%- set remember -%}
        insert into {{ horizon }}
        select
            {%- for column in data_columns if column.name in keys or column.name in seq %}
            {{ 's.tr.`' ~ column.name ~ '`' if column.name in seq else 'cast(null as ' ~ column.data_type ~ ')' }},
            {%- endfor %}
            current_timestamp()
        from ({{ newest }}) as s
    {%- endset -%}
    {%- do run_query(remember) -%}
{% endmacro %}
