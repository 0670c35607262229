{#- Tombstones older than cdc_tombstone_retention_hours moved to the
    horizon, once the run's files are logged (_cdc_record): the batch's
    outcomes were decided against the tombstones and the horizon as they
    were, and a run stopped before this point leaves them so, for its re-run
    to decide the same. -#}
{% macro _cdc_expire_tombstones(run, counts) %}
    {%- set tombstones = run['tombstones'] -%}
    {%- set expired = '_cdc_recorded_at < current_timestamp() - make_dt_interval(0, '
                      ~ run['cfg']['tombstone_retention_hours'] ~ ')' -%}
    {#- (none can be, in a table of no row before this run's deletes) -#}
    {%- if (counts['deletes'] > 0 or not run['tombstones_empty'])
           and run_query('select count(*) from ' ~ tombstones ~ ' where ' ~ expired).rows[0][0] > 0 -%}
        {%- do run_query('insert into ' ~ run['horizon'] ~ ' select * from ' ~ tombstones ~ ' where ' ~ expired) -%}
        {%- do run_query('delete from ' ~ tombstones ~ ' where ' ~ expired) -%}
    {%- endif -%}
{% endmacro %}
