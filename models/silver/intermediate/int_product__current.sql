{#- The current product with deleted products kept and flagged: the source
    of the snapshot dimension snp_product. -#}
with product as (
    select * from {{ ref('slv_retail__product') }}
),

final as (
    select
        product_id,
        is_deleted,
        {#- a deleted product's marker version carries no attributes -#}
        _cdc_commit_ts as changed_at,
        case when not is_deleted then product_name end as product_name,
        case when not is_deleted then category end as category,
        case when not is_deleted then unit_price end as unit_price
    from product
)

select * from final
