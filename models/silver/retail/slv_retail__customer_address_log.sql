{#- Every change ever applied to customer_address (see slv_retail__customer_master_log). -#}
{{ config(
    unique_key=['customer_id', '_cdc_phase', '_cdc_commit_ts', '_cdc_change_seq'],
    meta={'cdc_delete_when': 'false', 'cdc_truncate_when': 'false'},
) }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'customer_address')) }}
),

cleaned as (
    select
        {{ cdc_columns() }},
        customer_id,
        address_line,
        trim(city) as city,
        trim(country) as country
    from changes
)

select * from cleaned
