{#
    A change log keeps one row per change, so a Debezium TOAST placeholder
    (a column the change left unchanged, and did not send) needs the value
    the entity had just before that change. Within the batch
    _cdc_fill_unavailable gives it from the latest earlier change of the
    entity; what it could not fill, or filled from a change older than one
    the log already holds (a late batch), takes the value of the latest
    change of the entity in the log `log` (a table with `log_columns`) that
    is older than the row. SQL of the batch's rows (every column of
    run['batch']), filled so; rows without a placeholder pass through. A
    column with no earlier change anywhere (the entity's first change in the
    log, e.g. a log kept from a later run on) stays NULL and listed in
    `_cdc_unavailable`.
    Used for the model's kept changes (cdc_keep_changes: the log is
    `<table>__cdc_changes`) and for a model keyed by the sequence (the log
    is the table itself). Run only when the batch has such rows
    (_cdc_batch_counts: placeholders); the log is read by a join whose
    small side is those rows.
#}
{% macro _cdc_fill_from_log(run, log, log_columns) %}
    {%- set cfg = run['cfg'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set entity = _cdc_entity_keys(cfg) -%}
    {%- set batch_columns = [] -%}
    {%- for row in run_query('describe ' ~ run['batch']).rows if row[0] and not row[0].startswith('#') -%}
        {%- do batch_columns.append(row[0]) -%}
    {%- endfor -%}
    {%- set fillable = [] -%}
    {%- for column in run['data_columns'] if column.name not in cfg['keys'] and column.name not in seq
                                            and not column.name.startswith('_cdc_') and column.name in log_columns -%}
        {%- do fillable.append(column.name) -%}
    {%- endfor -%}
    {%- if fillable | length == 0 -%}
        {{ return('select * from ' ~ run['batch']) }}
    {%- endif %}
    select
        {%- for name in batch_columns %}
        {%- if name in fillable %}
        case when p.prior is not null and (array_contains(b._cdc_unavailable, {{ sql_string(name) }})
                                           or b._cdc_filled_from[{{ sql_string(name) }}] < p.prior.s)
            then p.prior.`{{ name }}` else b.`{{ name }}` end as `{{ name }}`{{ ',' if not loop.last }}
        {%- elif name == '_cdc_unavailable' %}
        case when p.prior is not null
            then filter(b._cdc_unavailable, c -> not array_contains(array({{ _bronze_sql_list(fillable) }}), c))
            else b._cdc_unavailable end as _cdc_unavailable{{ ',' if not loop.last }}
        {%- else %}
        b.`{{ name }}`{{ ',' if not loop.last }}
        {%- endif %}
        {%- endfor %}
    from {{ run['batch'] }} as b
    left join (
        select
            b._cdc_file,
            b._cdc_row,
            max_by(named_struct('s', {{ _cdc_seq_struct('l', seq) }}
                {%- for name in fillable %}, {{ sql_string(name) }}, l.`{{ name }}`{% endfor %}),
                {{ _cdc_seq_struct('l', seq) }}) as prior
        from {{ run['batch'] }} as b
        join {{ log }} as l
            on {% for key in entity %}l.`{{ key }}` = b.`{{ key }}` and {% endfor -%}
            {{ _cdc_seq_struct('l', seq) }} < {{ _cdc_seq_struct('b', seq) }}
        where size(b._cdc_unavailable) > 0 or size(b._cdc_filled_from) > 0
        group by b._cdc_file, b._cdc_row
    ) as p
        on p._cdc_file = b._cdc_file and p._cdc_row = b._cdc_row
{% endmacro %}
