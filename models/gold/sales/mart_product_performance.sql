{#- Units, revenue and orders per product and calendar month; cancelled
    orders, orders without a time and lines without a product excluded.
    Incremental: a run recomputes the products of the order lines
    fct_order_items changed since the last one (old and new images). -#}
{{ config(
    materialized='incremental',
    incremental_strategy='replace_by_key',
    on_schema_change='fail',
    unique_key=['product_id', 'month_start'],
    meta={'replace_key': 'product_id'},
) }}

{%- set run = gold_incremental_run() %}
{%- set changed -%}
    select product_id
    from ({{ gold_changed_rows(run, ref('fct_order_items'), ['order_id', 'line_no']) }}) as changed_lines
{%- endset %}

with items as (
    select * from {{ ref('fct_order_items') }}
    where
        not is_cancelled and order_ts is not null and product_id is not null
        and {{ gold_changed_only(run, 'product_id', changed) }}
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
