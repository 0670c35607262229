{#- Every change ever applied to customer_master, one row per change (a
    delete, and a truncate with a null key, is a row too): the change log full-history dimensions are built
    from. Same cleaning as slv_retail__customer_master. -#}
{{ config(
    unique_key=['customer_id', '_cdc_phase', '_cdc_commit_ts', '_cdc_change_seq'],
    meta={'cdc_delete_when': 'false', 'cdc_truncate_when': 'false'},
) }}

with changes as (
    {{ cdc_changes(source('dms_retail', 'customer_master')) }}
),

cleaned as (
    select
        {{ cdc_columns() }},
        customer_id,
        trim(first_name) as first_name,
        trim(last_name) as last_name,
        trim(employer_name) as employer_name,
        lower(trim(email_id)) as email_id
    from changes
)

select * from cleaned
