{#
    The batch's quarantined rows into `cdc_quarantine`, with file, row,
    reason and the row as written (the raw line, or JSON of the fields). A
    merge on model + file + row + text: a re-run after a crash adds nothing,
    and a file landed again with other content adds its own rows' text.
#}
{% macro _cdc_quarantine(run) %}
    {%- set names = run['names'] -%}
    {%- set quarantine -%}
        merge into {{ run['schema'] }}.cdc_quarantine as q
        using (
            select
                {{ sql_string(model.name) }} as model_name,
                '{{ invocation_id }}' as run_id,
                _cdc_file as file_path,
                cast(_cdc_row as bigint) as row_number,
                _cdc_final_reason as reason,
                {#- a row rejected after cdc_changes (e.g. a key the model's
                    SQL derives is null) has no text kept: its columns as JSON -#}
                {% if '_cdc_raw' in names -%}coalesce(_cdc_raw, {% endif -%}
                to_json(struct({% for name in names if name != '_cdc_raw' %}`{{ name }}`{{ ', ' if not loop.last }}{% endfor %}))
                {%- if '_cdc_raw' in names %}){% endif %} as record,
                current_timestamp() as quarantined_at
            from {{ run['batch'] }}
            where _cdc_outcome = 'quarantined'
        ) as s
        on q.model_name = s.model_name and q.file_path = s.file_path and q.row_number = s.row_number
            and q.record <=> s.record
        when not matched then insert *
    {%- endset -%}
    {%- do run_query(quarantine) -%}
{% endmacro %}
