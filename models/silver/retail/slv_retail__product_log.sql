{#- Every change ever applied to product (see slv_retail__customer_master_log). -#}
{{ config(
    unique_key=['product_id', '_cdc_phase', '_cdc_commit_ts', '_cdc_change_seq'],
    meta={'cdc_delete_when': 'false', 'cdc_truncate_when': 'false'},
) }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'product')) }}
),

cleaned as (
    select
        {{ cdc_columns() }},
        product_id,
        trim(product_name) as product_name,
        trim(category) as category,
        unit_price
    from changes
)

select * from cleaned
