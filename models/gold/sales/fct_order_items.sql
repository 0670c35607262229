{#- One row per order line, with the product and customer versions valid at
    the order time ('-1' when none was yet). Incremental like fct_orders: a
    run recomputes the lines of the orders whose lines, order row, customer
    or products changed since the last one. -#}
-- depends_on: {{ ref('order_status') }} (a reference table of fct_orders: its hash, gold_references)
{{ config(
    materialized='incremental',
    incremental_strategy='replace_by_key',
    on_schema_change='fail',
    unique_key=['order_id', 'line_no'],
    meta={'replace_key': 'order_id', 'gold_references': ['order_status']},
) }}

{%- set run = gold_incremental_run() %}
{%- set changed -%}
    {{ cdc_changed_keys(run, ref('slv_retail__order_items'), 'order_id') }}
    union
    {{ cdc_changed_keys(run, ref('slv_retail__orders'), 'order_id') }}
    union
    select order_id from {{ ref('slv_retail__orders') }}
    where customer_id in ({{ dimension_changed_keys(run, ref('dim_customer'), 'customer_id') }})
    union
    select order_id from {{ ref('slv_retail__order_items') }}
    where product_id in ({{ dimension_changed_keys(run, ref('dim_product'), 'product_id') }})
{%- endset %}

with items as (
    select * from {{ ref('slv_retail__order_items') }}
    where {{ gold_changed_only(run, 'order_id', changed) }}
),

orders as (
    select fct_orders.*
    from {{ ref('fct_orders') }} as fct_orders
    left semi join items on fct_orders.order_id = items.order_id
),

products as (
    select * from {{ ref('dim_product') }}
),

final as (
    select
        items.order_id,
        items.line_no,
        items.product_id,
        coalesce(products.product_sk, '-1') as product_sk,
        coalesce(orders.customer_sk, '-1') as customer_sk,
        orders.order_ts,
        orders.date_key,
        coalesce(orders.is_cancelled, false) as is_cancelled,
        items.quantity,
        items.unit_price,
        cast(items.line_amount as decimal(12, 2)) as line_amount
    from items
    left join orders
        on items.order_id = orders.order_id
    left join products
        on
            items.product_id = products.product_id
            and orders.order_ts >= products.rec_eff_dt
            and orders.order_ts < products.rec_exp_dt
            and not products.is_deleted
)

select * from final
