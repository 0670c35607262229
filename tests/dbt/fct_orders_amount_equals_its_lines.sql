{#- An order's amount and line count are the sums of its lines in
    fct_order_items: the two facts must agree (returns the orders that do not). -#}
with orders as (
    select * from {{ ref('fct_orders') }}
),

items as (
    select * from {{ ref('fct_order_items') }}
),

item_totals as (
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
        orders.line_count,
        orders.order_amount,
        item_totals.line_count as item_line_count,
        item_totals.order_amount as item_order_amount
    from orders
    left join item_totals
        on orders.order_id = item_totals.order_id
    where
        orders.line_count != coalesce(item_totals.line_count, 0)
        or orders.order_amount != coalesce(item_totals.order_amount, 0)
)

select * from final
