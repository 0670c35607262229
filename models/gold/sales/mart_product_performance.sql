{#- Units, revenue and orders per product and calendar month; cancelled
    orders excluded. -#}
with items as (
    select * from {{ ref('fct_order_items') }}
    where not is_cancelled and order_ts is not null
),

final as (
    select
        product_id,
        cast(trunc(order_ts, 'MM') as date) as month_start,
        cast(sum(quantity) as bigint) as units_sold,
        cast(sum(line_amount) as decimal(18, 2)) as revenue,
        cast(count(distinct order_id) as bigint) as order_count
    from items
    group by product_id, cast(trunc(order_ts, 'MM') as date)
)

select * from final
