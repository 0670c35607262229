{#
    Generic tests for SCD2 dimensions. Each returns the offending rows.
    Rows with a null entity key (the unknown member) are not versions.
    Arguments: entity_key, valid_from, valid_to (default rec_eff_dt /
    rec_exp_dt), is_current, is_deleted; the open end is 9999-12-31.
#}

{#- Versions of one key must not overlap. -#}
{% test scd2_no_overlap(model, entity_key, valid_from='rec_eff_dt', valid_to='rec_exp_dt') %}
    select * from ({{ _scd2_with_next_from(model, entity_key, valid_from, valid_to) }}) as ordered
    where next_from < {{ valid_to }}
{% endtest %}

{#- Consecutive versions of one key must meet, and the last one stays open
    (a delete is a deleted-marker version, not a gap). -#}
{% test scd2_no_gap(model, entity_key, valid_from='rec_eff_dt', valid_to='rec_exp_dt') %}
    select * from ({{ _scd2_with_next_from(model, entity_key, valid_from, valid_to) }}) as ordered
    where (next_from is not null and next_from > {{ valid_to }})
        or (next_from is null and {{ valid_to }} != timestamp '9999-12-31 00:00:00')
{% endtest %}

{#- Exactly one current version per live key, none for a deleted key, and
    is_current true exactly on the open version of a live key. -#}
{% test scd2_one_current(model, entity_key, valid_to='rec_exp_dt', is_current='is_current',
                         is_deleted='is_deleted') %}
    select
        {{ entity_key }},
        count_if({{ is_current }}) as current_versions,
        max_by({{ is_deleted }}, {{ valid_to }}) as last_is_deleted
    from {{ model }}
    where {{ entity_key }} is not null
    group by {{ entity_key }}
    having count_if({{ is_current }}) != case when max_by({{ is_deleted }}, {{ valid_to }}) then 0 else 1 end
        or count_if({{ is_current }} and {{ valid_to }} != timestamp '9999-12-31 00:00:00') > 0
{% endtest %}

{#- Every version has a positive interval. -#}
{% test scd2_positive_interval(model, valid_from='rec_eff_dt', valid_to='rec_exp_dt') %}
    select * from {{ model }}
    where not ({{ valid_from }} < {{ valid_to }})
{% endtest %}

{#- Each version of a (non-null) key with the start of the next one. -#}
{% macro _scd2_with_next_from(model, entity_key, valid_from, valid_to) %}
    select
        {{ entity_key }},
        {{ valid_from }},
        {{ valid_to }},
        lead({{ valid_from }}) over (partition by {{ entity_key }} order by {{ valid_from }}) as next_from
    from {{ model }}
    where {{ entity_key }} is not null
{% endmacro %}
