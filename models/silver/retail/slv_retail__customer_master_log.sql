{#- Every change ever read for customer_master (deletes included; a truncate is a
    row with a null key): the change log full-history dimensions are built
    from. Not a second reader of the source: slv_retail__customer_master reads,
    validates and cleans the files once and keeps every change it read
    (cdc_keep_changes); this view selects the log's columns from them. -#}
{{ config(materialized='view') }}

select
    customer_id,
    first_name,
    last_name,
    employer_name,
    email_id,
    {{ cdc_columns(kinds=['provenance']) }},
    _cdc_loaded_at,
    _cdc_run_id
from {{ cdc_change_log(ref('slv_retail__customer_master')) }}
