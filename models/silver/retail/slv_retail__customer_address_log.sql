{#- Every change ever read for customer_address (see slv_retail__customer_master_log). -#}
{{ config(materialized='view') }}

select
    customer_id,
    address_line,
    city,
    country,
    {{ cdc_columns(kinds=['provenance']) }},
    _cdc_loaded_at,
    _cdc_run_id
from {{ cdc_change_log(ref('slv_retail__customer_address')) }}
