{#
    The last step of a CDC run, and the only one that marks files as read:
    every listed file into cdc_file_log (applied, with its rows in the file,
    read, applied, superseded, quarantined and Debezium events skipped; or
    ignored, not a data file; files held back as incomplete are not logged,
    so the next run reads them again), then the expired tombstones moved
    to the horizon (_cdc_expire_tombstones), the run's scratch files and
    temporary views dropped, and the run's line in the dbt log. Returns the
    statement that writes the run's row into cdc_run_audit (the strategy's
    SQL, run by the materialization).
#}
{% macro _cdc_record(run, counts) %}
    {%- set schema = run['schema'] -%}
    {%- set batch = run['batch'] -%}
    {%- set listed = run['listed'] -%}
    {%- set events = run['events'] -%}
    {#- the batch's counts per file (_cdc_batch_counts), as values: the
        batch is not read again -#}
    {%- set values = [] -%}
    {%- for stats in counts['per_file'] -%}
        {%- set numbers = [] -%}
        {%- for number in [stats['file_modified_at'], stats['in_file'] if '_cdc_file_rows' in run['names'] else stats['arrived'],
                           stats['read'], stats['applied'], stats['superseded'], stats['quarantined']] -%}
            {%- do numbers.append('null' if number is none else number | int | string) -%}
        {%- endfor -%}
        {%- do values.append('(' ~ sql_string(stats['file']) ~ ', timestamp_micros(' ~ numbers[0] ~ '), '
            ~ numbers[1:] | join(', ') ~ ', ' ~ ('true' if stats['held'] > 0 else 'false') ~ ')') -%}
    {%- endfor -%}
    {%- set per_file -%}
        {%- if values -%}
        (select * from values {{ values | join(', ') }}
            as c(file_path, file_modified_at, rows_in_file, rows_read, rows_applied, rows_superseded,
                 rows_quarantined, held))
        {%- else -%}
        (select cast(null as string) as file_path, cast(null as timestamp) as file_modified_at,
            0L as rows_in_file, 0L as rows_read, 0L as rows_applied, 0L as rows_superseded,
            0L as rows_quarantined, false as held where false)
        {%- endif -%}
    {%- endset -%}
    {%- if listed is none -%}
        {#- a model that does not read through cdc_changes(): the files it read -#}
        {%- set files = '(select file_path, file_modified_at, cast(null as bigint) as file_size, true as is_data from '
                        ~ per_file ~ ' as read_files)' -%}
    {%- else -%}
        {%- set files = listed -%}
    {%- endif -%}
    {%- set file_log -%}
        insert into {{ schema }}.cdc_file_log
            (model_name, file_path, file_modified_at, row_count, applied_at, run_id, status, file_size,
             rows_in_file, rows_applied, rows_superseded, rows_quarantined, events_skipped)
        select
            {{ sql_string(model.name) }}, f.file_path, f.file_modified_at, coalesce(c.rows_read, 0),
            current_timestamp(), '{{ invocation_id }}',
            case when f.is_data then 'applied' else 'ignored' end, f.file_size,
            case when f.is_data then coalesce(c.rows_in_file, 0) end,
            coalesce(c.rows_applied, 0), coalesce(c.rows_superseded, 0), coalesce(c.rows_quarantined, 0),
            {{ 'coalesce(e.events_skipped, 0)' if events else '0' }}
        from {{ files }} as f
        left join {{ per_file }} as c on f.file_path = c.file_path
        {%- if events %}
        left join {{ events }} as e on f.file_path = e.file_path
        {%- endif %}
        where not coalesce(c.held, false)
    {%- endset -%}
    {%- do run_query(file_log) -%}
    {%- if run['has_tombstones'] -%}
        {%- do _cdc_expire_tombstones(run, counts) -%}
    {%- endif -%}
    {%- do _cdc_scratch_drop(schema, batch) -%}
    {%- for view in [listed, events, run['records']] if view -%}
        {%- do run_query('drop view if exists ' ~ view) -%}
    {%- endfor -%}
    {%- if not run['adaptive'] -%}
        {%- do run_query('reset spark.sql.adaptive.enabled') -%}
    {%- endif -%}
    {%- set snapshot = current_snapshot_id(table_properties(run['target'])) -%}
    {%- do log('cdc ' ~ model.name ~ ': ' ~ counts['files'] ~ ' file(s), ' ~ counts['read'] ~ ' read, '
               ~ counts['applied'] ~ ' applied, ' ~ counts['superseded'] ~ ' superseded, '
               ~ counts['quarantined'] ~ ' quarantined'
               ~ (', ' ~ counts['ignored_files'] ~ ' non-data file(s) ignored' if counts['ignored_files'] else '')
               ~ (', ' ~ counts['held_files'] ~ ' incomplete file(s) held back' if counts['held_files'] else ''), info=true) -%}
    {%- set audit -%}
        insert into {{ schema }}.cdc_run_audit
            (model_name, run_id, run_started_at, finished_at, is_initial, files_read, rows_read, rows_applied,
             rows_superseded, rows_quarantined, snapshot_id, files_ignored, files_held)
        values (
            {{ sql_string(model.name) }}, '{{ invocation_id }}', timestamp '{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}',
            current_timestamp(), {{ 'true' if run['initial'] else 'false' }},
            {{ counts['files'] }}, {{ counts['read'] }}, {{ counts['applied'] }}, {{ counts['superseded'] }},
            {{ counts['quarantined'] }}, {{ snapshot or 'null' }},
            {{ counts['ignored_files'] }}, {{ counts['held_files'] }}
        )
    {%- endset -%}
    {{ return(audit) }}
{% endmacro %}
