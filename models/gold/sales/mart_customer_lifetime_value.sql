{#- Lifetime orders and revenue per customer; cancelled orders and orders
    without a customer excluded.
    Incremental: a run recomputes the customers of the orders fct_orders
    changed since the last one (old and new images: an order moved to
    another customer changes both). -#}
{{ config(
    materialized='incremental',
    incremental_strategy='replace_by_key',
    on_schema_change='fail',
    unique_key='customer_id',
    meta={'replace_key': 'customer_id'},
) }}

{%- set run = gold_incremental_run() %}
{%- set changed -%}
    select customer_id from ({{ gold_changed_rows(run, ref('fct_orders'), ['order_id']) }}) as changed_orders
{%- endset %}

with orders as (
    select * from {{ ref('fct_orders') }}
    where
        not is_cancelled and customer_id is not null
        and {{ gold_changed_only(run, 'customer_id', changed) }}
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
