{#- Lifetime orders and revenue per customer; cancelled orders excluded. -#}
with orders as (
    select * from {{ ref('fct_orders') }}
    where not is_cancelled
),

final as (
    select
        customer_id,
        cast(count(*) as bigint) as order_count,
        cast(sum(order_amount) as decimal(18, 2)) as lifetime_revenue,
        cast(avg(order_amount) as decimal(18, 2)) as average_order_value,
        min(order_ts) as first_order_at,
        max(order_ts) as last_order_at
    from orders
    group by customer_id
)

select * from final
