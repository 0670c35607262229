{{ config(unique_key='order_id') }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'orders')) }}
),

cleaned as (
    select
        {{ cdc_columns() }},
        order_id,
        customer_id,
        order_ts,
        cast(order_ts as date) as order_date,
        upper(trim(status)) as status,
        row_audit_ts
    from changes
)

select * from cleaned
