{#
    Apply one batch of change rows (`source`, a view of the model's SQL) to
    the silver table `target`. Called by the cdc_merge strategy on every run,
    including the first (`initial`: the table is created empty first).

    Order of work, and why a crash anywhere is safe:
      1. write the batch once to a scratch table, with each row's reject reason, delete flag and
         content hash;
      2. fail on ties the sequence cannot break (nothing written yet);
      3. quarantine bad rows       (merge on model+file+row: re-runs add nothing);
      4. keep the last change per key by sequence; record hard deletes as
         tombstones                (merge keeping the newest: idempotent);
      5. keep only changes newer than the stored row and the tombstone, and
         merge them               (a change equal to what is stored is a no-op);
      6. log the files read and write the run's audit row.
    A crash before 6 leaves the files unlogged, so the re-run reads them again
    and steps 3-5 change nothing they already did.
#}
{% macro cdc_apply(source, target, initial) %}
    {%- set cfg = cdc_config() -%}
    {%- set source_columns = adapter.get_columns_in_relation(source) -%}
    {%- set names = source_columns | map(attribute='name') | list -%}
    {%- do cdc_config(check_columns=names) -%}
    {%- set transient = ['_cdc_reject_reason', '_cdc_raw'] -%}
    {%- set data_columns = [] -%}
    {%- for column in source_columns if column.name not in transient -%}
        {%- do data_columns.append(column) -%}
    {%- endfor -%}
    {%- set soft = cfg['delete_mode'] == 'soft' -%}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set schema = target.schema -%}
    {%- set tombstones = schema ~ '.' ~ target.identifier ~ '__cdc_tombstones' -%}
    {#- the batch is written once to a scratch table: its row numbers come from a
        non-deterministic function, which Spark refuses as a MERGE source -#}
    {%- set batch = schema ~ '.' ~ target.identifier ~ '__cdc_batch' -%}
    {%- set to_apply = target.identifier ~ '__cdc_apply' -%}
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
                'write.merge.mode' = '{{ _cdc_setting('cdc_write_mode') or "merge-on-read" }}',
                'write.update.mode' = '{{ _cdc_setting('cdc_write_mode') or "merge-on-read" }}',
                'write.delete.mode' = '{{ _cdc_setting('cdc_write_mode') or "merge-on-read" }}'
            )
        {%- endset -%}
        {%- do run_query(ddl) -%}
        {%- do run_query('alter table ' ~ target ~ ' write ordered by ' ~ keys | join(', ')) -%}
        {%- do run_query('drop table if exists ' ~ tombstones) -%}
        {%- do run_query("delete from " ~ schema ~ ".cdc_file_log where model_name = '" ~ model.name ~ "'") -%}
    {%- else -%}
        {%- do _cdc_evolve_schema(target, data_columns) -%}
    {%- endif -%}
    {%- set target_columns = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}

    {#- 1. the batch, read once -#}
    {%- set checks -%}
        case
            {%- for key in keys %}
            when `{{ key }}` is null then 'missing_key: {{ key }}'
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
    {%- do run_query('drop table if exists ' ~ batch ~ ' purge') -%}
    {%- set cache_sql -%}
        create table {{ batch }} using iceberg as
        select
            *,
            {{ 'coalesce(_cdc_reject_reason, ' ~ checks ~ ')' if '_cdc_reject_reason' in names else checks }} as _cdc_reason,
            coalesce({{ cfg['delete_when'] }}, false) as _cdc_is_delete,
            sha2(to_json(struct({{ hashed | join(', ') }})), 256) as _cdc_row_hash
        from {{ source }}
    {%- endset -%}
    {%- do run_query(cache_sql) -%}

    {#- 2. ties the sequence cannot break -#}
    {%- set key_list = '`' ~ keys | join('`, `') ~ '`' -%}
    {%- set seq_list = '`' ~ seq | join('`, `') ~ '`' -%}
    {%- set ties -%}
        select to_json(named_struct(
            {%- for key in keys %}'{{ key }}', `{{ key }}`, {% endfor -%}
            {%- for column in seq %}'{{ column }}', `{{ column }}`{{ ', ' if not loop.last }}{% endfor -%}
        )) as tie
        from {{ batch }}
        where _cdc_reason is null
        group by {{ key_list }}, {{ seq_list }}
        having count(distinct _cdc_row_hash) > 1
        limit 20
    {%- endset -%}
    {%- set tie_rows = run_query(ties).rows -%}
    {%- if tie_rows | length > 0 -%}
        {%- do run_query('drop table if exists ' ~ batch ~ ' purge') -%}
        {%- do exceptions.raise_compiler_error(
            "model '" ~ model.name ~ "': " ~ tie_rows | length ~ (" or more" if tie_rows | length == 20 else "")
            ~ " key(s) have different changes with the same sequence (" ~ seq | join(', ')
            ~ "), so which one is last cannot be decided: " ~ tie_rows | map(attribute=0) | join('; ')
            ~ ". Add a column that breaks the tie to cdc_sequence_by, or correct the source files.") -%}
    {%- endif -%}

    {#- 3. quarantine -#}
    {%- set counts = run_query('select count(*), count_if(_cdc_reason is not null), count(distinct _cdc_file), '
                               ~ 'count_if(_cdc_reason is null and _cdc_is_delete) from ' ~ batch).rows[0] -%}
    {%- if counts[1] > 0 -%}
        {%- set quarantine -%}
            merge into {{ schema }}.cdc_quarantine as q
            using (
                select
                    '{{ model.name }}' as model_name,
                    '{{ invocation_id }}' as run_id,
                    _cdc_file as file_path,
                    cast(_cdc_row as bigint) as row_number,
                    _cdc_reason as reason,
                    {{ '_cdc_raw' if '_cdc_raw' in names else 'to_json(struct(*))' }} as record,
                    current_timestamp() as quarantined_at
                from {{ batch }}
                where _cdc_reason is not null
            ) as s
            on q.model_name = s.model_name and q.file_path = s.file_path and q.row_number = s.row_number
            when not matched then insert *
        {%- endset -%}
        {%- do run_query(quarantine) -%}
    {%- endif -%}

    {#- 4. last change per key; tombstones for hard deletes -#}
    {%- set latest -%}
        select * from (
            select
                *,
                row_number() over (
                    partition by {{ key_list }}
                    order by {% for column in seq %}`{{ column }}` desc, {% endfor %}_cdc_file, _cdc_row
                ) as _cdc_rank
            from {{ batch }}
            where _cdc_reason is null
        ) as ranked
        where _cdc_rank = 1
    {%- endset -%}
    {%- set has_tombstones = not soft -%}
    {%- if has_tombstones -%}
        {%- set tomb_ddl -%}
            create table if not exists {{ tombstones }} (
                {%- for column in data_columns if column.name in keys or column.name in seq %}
                `{{ column.name }}` {{ column.data_type }},
                {%- endfor %}
                _cdc_recorded_at timestamp
            ) using iceberg tblproperties ('format-version' = '2')
        {%- endset -%}
        {%- do run_query(tomb_ddl) -%}
        {%- set tomb_merge -%}
            merge into {{ tombstones }} as t
            using (
                select {{ key_list }}, {{ seq_list }}, current_timestamp() as _cdc_recorded_at
                from ({{ latest }}) as l
                where _cdc_is_delete
            ) as s
            on {% for key in keys %}t.`{{ key }}` = s.`{{ key }}`{{ ' and ' if not loop.last }}{% endfor %}
            when matched and {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }} then update set *
            when not matched then insert *
        {%- endset -%}
        {#- only commit when there is something to write: a run without
            deletes (or without files) leaves the tombstone table alone -#}
        {%- if counts[3] > 0 -%}
            {%- do run_query(tomb_merge) -%}
        {%- endif -%}
        {%- set expired = '_cdc_recorded_at < current_timestamp() - make_dt_interval(0, '
                          ~ cfg['tombstone_retention_hours'] ~ ')' -%}
        {%- if run_query('select count(*) from ' ~ tombstones ~ ' where ' ~ expired).rows[0][0] > 0 -%}
            {%- do run_query('delete from ' ~ tombstones ~ ' where ' ~ expired) -%}
        {%- endif -%}
    {%- endif -%}

    {#- 5. changes newer than what is stored, then the merge -#}
    {%- set key_join = [] -%}
    {%- for key in keys -%}{%- do key_join.append('t.`' ~ key ~ '` = s.`' ~ key ~ '`') -%}{%- endfor -%}
    {%- do run_query('uncache table if exists ' ~ to_apply) -%}
    {%- set apply_sql -%}
        cache table {{ to_apply }} as
        select s.*
        from ({{ latest }}) as s
        left join (select {{ key_list }}, {{ seq_list }} from {{ target }}) as t
            on {{ key_join | join(' and ') }}
        {%- if has_tombstones %}
        left join {{ tombstones }} as d
            on {{ key_join | join(' and ') | replace('t.`', 'd.`') }}
        {%- endif %}
        where (t.`{{ keys[0] }}` is null or {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }})
        {%- if has_tombstones %}
            and (d.`{{ keys[0] }}` is null or {{ _cdc_seq_struct('s', seq) }} >= {{ _cdc_seq_struct('d', seq) }})
        {%- endif %}
    {%- endset -%}
    {%- do run_query(apply_sql) -%}
    {%- set applied = run_query('select count(*) from ' ~ to_apply).rows[0][0] -%}
    {%- if applied > 0 -%}
        {%- do run_query(_cdc_merge_sql(target, to_apply, cfg, data_columns, target_columns)) -%}
    {%- endif -%}

    {#- 6. file log and audit -#}
    {%- set file_log -%}
        insert into {{ schema }}.cdc_file_log
        select
            '{{ model.name }}', _cdc_file, max(_cdc_file_modified_at), count(*), current_timestamp(),
            '{{ invocation_id }}'
        from {{ batch }}
        group by _cdc_file
    {%- endset -%}
    {%- if counts[2] > 0 -%}{%- do run_query(file_log) -%}{%- endif -%}
    {%- do run_query('uncache table if exists ' ~ to_apply) -%}
    {%- do run_query('drop view if exists ' ~ to_apply) -%}
    {%- do run_query('drop table if exists ' ~ batch ~ ' purge') -%}
    {%- set snapshot = run_query('select snapshot_id from ' ~ target ~ '.snapshots order by committed_at desc limit 1').rows -%}
    {%- set summary = {'model': model.name, 'read': counts[0], 'applied': applied,
                       'superseded': counts[0] - counts[1] - applied, 'quarantined': counts[1],
                       'files': counts[2]} -%}
    {%- do log('cdc ' ~ model.name ~ ': ' ~ counts[2] ~ ' file(s), ' ~ counts[0] ~ ' read, ' ~ applied
               ~ ' applied, ' ~ summary['superseded'] ~ ' superseded, ' ~ counts[1] ~ ' quarantined', info=true) -%}
    {%- set audit -%}
        insert into {{ schema }}.cdc_run_audit values (
            '{{ model.name }}', '{{ invocation_id }}', timestamp '{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}',
            current_timestamp(), {{ 'true' if initial else 'false' }},
            {{ counts[2] }}, {{ counts[0] }}, {{ applied }}, {{ summary['superseded'] }}, {{ counts[1] }},
            {{ snapshot[0][0] if snapshot | length > 0 else 'null' }}
        )
    {%- endset -%}
    {{ return(audit) }}
{% endmacro %}

{% macro _cdc_seq_struct(alias, columns) -%}
    named_struct({% for column in columns %}'s{{ loop.index }}', {{ alias }}.`{{ column }}`{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}
