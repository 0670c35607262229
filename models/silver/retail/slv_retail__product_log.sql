{#- Every change ever read for product (see slv_retail__customer_master_log). -#}
{{ config(materialized='view') }}

select
    product_id,
    product_name,
    category,
    unit_price,
    _cdc_phase,
    _cdc_op,
    _cdc_commit_ts,
    _cdc_change_seq,
    _cdc_file,
    _cdc_file_modified_at,
    _cdc_row,
    _cdc_loaded_at,
    _cdc_run_id
from {{ cdc_change_log(ref('slv_retail__product')) }}
