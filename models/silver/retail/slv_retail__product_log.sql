{#- Every change ever read for product (see slv_retail__customer_master_log). -#}
{{ config(materialized='view') }}

select
    product_id,
    product_name,
    category,
    unit_price,
    {{ cdc_columns(kinds=['provenance']) }},
    _cdc_loaded_at,
    _cdc_run_id
from {{ cdc_change_log(ref('slv_retail__product')) }}
