{#
    The batch's quarantined rows into `cdc_quarantine`, with file, row,
    reason and the row as written (the raw line, or JSON of the fields). A
    merge on model + file + row: a re-run after a crash adds nothing.
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
                {% if '_cdc_raw' in names -%}
                _cdc_raw
                {%- else -%}
                to_json(struct({% for name in names %}`{{ name }}`{{ ', ' if not loop.last }}{% endfor %}))
                {%- endif %} as record,
                current_timestamp() as quarantined_at
            from {{ run['batch'] }}
            where _cdc_outcome = 'quarantined'
        ) as s
        on q.model_name = s.model_name and q.file_path = s.file_path and q.row_number = s.row_number
        when not matched then insert *
    {%- endset -%}
    {%- do run_query(quarantine) -%}
{% endmacro %}
