{#- The current customer (master + address) with deleted customers kept and
    flagged, and the commit time of its latest change: the source of the
    snapshot dimension snp_customer. -#}
with master as (
    select * from {{ ref('slv_retail__customer_master') }}
),

address as (
    select * from {{ ref('slv_retail__customer_address') }}
),

joined as (
    select
        master.customer_id,
        master.is_deleted,
        {#- a deleted customer's marker version carries no attributes -#}
        case when not master.is_deleted then master.first_name end as first_name,
        case when not master.is_deleted then master.last_name end as last_name,
        case when not master.is_deleted then master.employer_name end as employer_name,
        case when not master.is_deleted then master.email_id end as email_id,
        case when not master.is_deleted and not address.is_deleted then address.city end as city,
        case when not master.is_deleted and not address.is_deleted then address.country end as country,
        {#- a deleted customer's version starts at the delete: a later change
            of the address changes nothing it holds -#}
        case when master.is_deleted then master._cdc_commit_ts
            else greatest(master._cdc_commit_ts, coalesce(address._cdc_commit_ts, master._cdc_commit_ts))
        end as changed_at
    from master
    left join address
        on master.customer_id = address.customer_id
)

select * from joined
