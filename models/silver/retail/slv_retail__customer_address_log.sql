{#- Every change ever read for customer_address (see slv_retail__customer_master_log). -#}
{{ config(materialized='view') }}

select
    customer_id,
    address_line,
    city,
    country,
    _cdc_phase,
    _cdc_op,
    _cdc_commit_ts,
    _cdc_change_seq,
    _cdc_file,
    _cdc_file_modified_at,
    _cdc_row,
    _cdc_loaded_at,
    _cdc_run_id
from {{ cdc_change_log(ref('slv_retail__customer_address')) }}
