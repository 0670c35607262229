with days as (
    {{ date_spine(var('date_spine_start', '2020-01-01'), var('date_spine_end', '2030-12-31')) }}
),

final as (
    select
        cast(date_format(date_day, 'yyyyMMdd') as int) as date_key,
        date_day,
        year(date_day) as year_number,
        quarter(date_day) as quarter_number,
        month(date_day) as month_number,
        date_format(date_day, 'MMMM') as month_name,
        dayofmonth(date_day) as day_of_month,
        date_format(date_day, 'EEEE') as day_name,
        dayofweek(date_day) in (1, 7) as is_weekend,
        cast(trunc(date_day, 'MM') as date) as month_start
    from days
)

select * from final
