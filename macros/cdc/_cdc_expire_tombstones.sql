{#- Tombstones older than cdc_tombstone_retention_hours moved to the
    horizon, once the run's files are logged (_cdc_record): the batch's
    outcomes were decided against the tombstones and the horizon as they
    were, and a run stopped before this point leaves them so, for its re-run
    to decide the same. -#}
{% macro _cdc_expire_tombstones(run, counts) %}
    {%- set tombstones = run['tombstones'] -%}
    {#- (none can be, in a table of no row before this run's deletes) -#}
    {%- if counts['deletes'] > 0 or not run['tombstones_empty'] -%}
        {#- the cutoff taken once, in microseconds: the move and the delete
            take the same tombstones (each statement's current_timestamp()
            is its own: one that came of age between the two would be
            deleted without being moved). The oldest tombstone, not a count:
            Iceberg answers a minimum from its files' statistics, without
            reading them, where no file has deletes (0.06 s against 0.14 s
            for the count, 2026-12-07); one query's current_timestamp() is
            one instant -#}
        {%- set cutoff = "current_timestamp() - make_dt_interval(0, " ~ run['cfg']['tombstone_retention_hours'] ~ ")" -%}
        {%- set found -%}
            select coalesce(min(_cdc_recorded_at) < {{ cutoff }}, false), unix_micros({{ cutoff }})
            from {{ tombstones }}
        {%- endset -%}
        {%- set row = run_query(found).rows[0] -%}
        {%- if row[0] -%}
            {%- set expired = '_cdc_recorded_at < timestamp_micros(' ~ row[1] ~ 'L)' -%}
            {%- do run_query('insert into ' ~ run['horizon'] ~ ' select * from ' ~ tombstones ~ ' where ' ~ expired) -%}
            {%- do run_query('delete from ' ~ tombstones ~ ' where ' ~ expired) -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
