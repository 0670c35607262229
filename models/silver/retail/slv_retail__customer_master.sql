{{ config(unique_key='customer_id', meta={'cdc_delete_mode': 'soft', 'cdc_keep_changes': true}) }}

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
        lower(trim(email_id)) as email_id,
        nullif(substring_index(lower(trim(email_id)), '@', -1), lower(trim(email_id))) as email_domain,
        trim(loyalty_tier) as loyalty_tier,
        row_audit_ts
    from changes
)

select * from cleaned
