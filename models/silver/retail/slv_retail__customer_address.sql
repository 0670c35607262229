{{ config(unique_key='customer_id', meta={'cdc_delete_mode': 'soft', 'cdc_keep_changes': true}) }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'customer_address')) }}
),

cleaned as (
    select
        {{ cdc_columns() }},
        customer_id,
        address_line,
        trim(city) as city,
        trim(country) as country,
        row_audit_ts
    from changes
)

select * from cleaned
