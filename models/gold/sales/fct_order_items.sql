{#- One row per order line, with the product and customer versions valid at
    the order time ('-1' when none was yet). -#}
with items as (
    select * from {{ ref('slv_retail__order_items') }}
),

orders as (
    select * from {{ ref('fct_orders') }}
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
