{{ config(unique_key='product_id', meta={'cdc_delete_mode': 'soft', 'cdc_keep_changes': true}) }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'product')) }}
),

cleaned as (
    select
        {{ cdc_columns() }},
        product_id,
        trim(product_name) as product_name,
        trim(category) as category,
        unit_price,
        row_audit_ts
    from changes
)

select * from cleaned
