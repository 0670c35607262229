{#
    A truncate (Debezium op t) at its place in the order: every stored row
    older than the newest applied truncate of the batch is deleted (soft
    mode: marked deleted at the truncate's time), and the truncate is kept
    in the horizon table (null keys), so that a late change older than it
    is superseded instead of bringing a row back. Both statements are
    idempotent: a re-run after a crash does them again to the same effect.
#}
{% macro _cdc_apply_truncate(run) %}
    {%- set cfg = run['cfg'] -%}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set newest -%}
        select max_by(named_struct(
            {%- for column in seq %}'{{ column }}', `{{ column }}`, {% endfor -%}
            '_deleted_at', `{{ cfg['deleted_at_column'] }}`), {{ _cdc_seq_struct('b', seq) }}) as tr
        from {{ run['batch'] }} as b
        where b._cdc_outcome = 'applied' and b._cdc_is_truncate
    {%- endset -%}
    {%- set older -%}
        {{ _cdc_seq_struct('t', seq) }} < named_struct(
            {%- for column in seq %}'s{{ loop.index }}', s.tr.`{{ column }}`{{ ', ' if not loop.last }}{% endfor -%})
    {%- endset -%}
    {%- set wipe -%}
        merge into {{ run['target'] }} as t
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
        insert into {{ run['horizon'] }}
        select
            {%- for column in run['data_columns'] if column.name in keys or column.name in seq %}
            {{ 's.tr.`' ~ column.name ~ '`' if column.name in seq else 'cast(null as ' ~ column.data_type ~ ')' }},
            {%- endfor %}
            current_timestamp()
        from ({{ newest }}) as s
    {%- endset -%}
    {%- do run_query(remember) -%}
{% endmacro %}
