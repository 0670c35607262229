{#- Revenue and orders per day and customer country (the country of the
    customer's address when the order was placed); cancelled orders excluded. -#}
with orders as (
    select * from {{ ref('fct_orders') }}
),

customers as (
    select * from {{ ref('dim_customer') }}
),

final as (
    select
        orders.order_date,
        coalesce(customers.country, 'Unknown') as country,
        cast(count(*) as bigint) as order_count,
        cast(sum(orders.order_amount) as decimal(18, 2)) as revenue
    from orders
    inner join customers
        on orders.customer_sk = customers.customer_sk
    where not orders.is_cancelled
    group by orders.order_date, coalesce(customers.country, 'Unknown')
)

select * from final
