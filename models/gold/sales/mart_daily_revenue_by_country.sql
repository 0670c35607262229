{#- Revenue and orders per day and customer country (the country of the
    customer's address when the order was placed); cancelled orders and
    orders without a time excluded.
    Incremental: a run recomputes the days of the orders fct_orders changed
    since the last one (old and new images) and of the orders whose customer
    version dim_customer rewrote since. -#}
{{ config(
    materialized='incremental',
    incremental_strategy='replace_by_key',
    on_schema_change='fail',
    unique_key=['order_date', 'country'],
    meta={'replace_key': 'order_date'},
) }}

{%- set run = gold_incremental_run() %}
{%- set changed -%}
    select order_date from ({{ gold_changed_rows(run, ref('fct_orders'), ['order_id']) }}) as changed_orders
    union
    select order_date from {{ ref('fct_orders') }}
    where customer_sk in ({{ dimension_changed_keys(run, ref('dim_customer'), 'customer_sk') }})
{%- endset %}

with orders as (
    select * from {{ ref('fct_orders') }}
    where order_date is not null and {{ gold_changed_only(run, 'order_date', changed) }}
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
