{#- One row per order, with the surrogate key of the customer version valid
    when the order was placed ('-1', the unknown member, when none was yet).
    Rebuilt each run: a late dimension change re-points old orders. -#}
with orders as (
    select * from {{ ref('slv_retail__orders') }}
),

items as (
    select * from {{ ref('slv_retail__order_items') }}
),

customers as (
    select * from {{ ref('dim_customer') }}
),

statuses as (
    select * from {{ ref('order_status') }}
),

order_totals as (
    select
        order_id,
        count(*) as line_count,
        sum(line_amount) as order_amount
    from items
    group by order_id
),

final as (
    select
        orders.order_id,
        orders.customer_id,
        coalesce(customers.customer_sk, '-1') as customer_sk,
        orders.order_ts,
        orders.order_date,
        cast(date_format(orders.order_date, 'yyyyMMdd') as int) as date_key,
        orders.status,
        coalesce(statuses.is_cancelled, false) as is_cancelled,
        cast(coalesce(order_totals.line_count, 0) as int) as line_count,
        cast(coalesce(order_totals.order_amount, 0) as decimal(18, 2)) as order_amount
    from orders
    left join order_totals
        on orders.order_id = order_totals.order_id
    left join statuses
        on orders.status = statuses.status
    left join customers
        on
            orders.customer_id = customers.customer_id
            and orders.order_ts >= customers.rec_eff_dt
            and orders.order_ts < customers.rec_exp_dt
            and not customers.is_deleted
)

select * from final
