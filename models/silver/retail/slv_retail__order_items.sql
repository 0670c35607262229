{{ config(unique_key=['order_id', 'line_no']) }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'order_items')) }}
),

cleaned as (
    select
        {{ cdc_columns() }},
        order_id,
        line_no,
        product_id,
        quantity,
        unit_price,
        cast(quantity * unit_price as decimal(12, 2)) as line_amount,
        row_audit_ts
    from changes
)

select * from cleaned
