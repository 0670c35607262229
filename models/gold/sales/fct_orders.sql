{#- One row per order, with the surrogate key of the customer version valid
    when the order was placed ('-1', the unknown member, when none was yet).
    Incremental: a run recomputes the orders changed since the last one
    (macros/gold/gold_incremental.sql), those whose lines changed and those
    of customers whose versions were rebuilt (a late change re-points them). -#}
{{ config(
    materialized='incremental',
    incremental_strategy='replace_by_key',
    on_schema_change='fail',
    unique_key='order_id',
    meta={'replace_key': 'order_id', 'gold_references': ['order_status']},
) }}

{%- set run = gold_incremental_run() %}
{%- set changed -%}
    {{ cdc_changed_keys(run, ref('slv_retail__orders'), 'order_id') }}
    union
    {{ cdc_changed_keys(run, ref('slv_retail__order_items'), 'order_id') }}
    union
    select order_id from {{ ref('slv_retail__orders') }}
    where customer_id in ({{ dimension_changed_keys(run, ref('dim_customer'), 'customer_id') }})
{%- endset %}

with orders as (
    select * from {{ ref('slv_retail__orders') }}
    where {{ gold_changed_only(run, 'order_id', changed) }}
),

items as (
    select order_items.*
    from {{ ref('slv_retail__order_items') }} as order_items
    left semi join orders on order_items.order_id = orders.order_id
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
