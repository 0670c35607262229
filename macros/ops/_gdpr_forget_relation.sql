{#
    Remove the rows of erased subjects from one table, its CDC tombstones
    (<table>__cdc_tombstones), its kept changes (<table>__cdc_changes) and
    its quarantined rows (cdc_quarantine: a
    key value as a field of the raw line or JSON record, _gdpr_record_match),
    after adding to the ledger the other keys its
    subject rows carry (e.g. the order_id of an erased customer's orders).
    `mapping`: the model's gdpr_subject, {key name: column}.
    Returns {'removed': {table: rows}, 'propagated': new keys}.
#}
{% macro _gdpr_forget_relation(ledger, relation, mapping, model_name, run_id, origin) %}
    {%- set columns = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
    {%- set present = {} -%}
    {%- for key, column in mapping.items() if column | lower in columns -%}
        {%- do present.update({key: column}) -%}
    {%- endfor -%}
    {%- set result = {'removed': {}, 'propagated': 0} -%}
    {%- if present | length == 0 -%}{{ return(result) }}{%- endif -%}
    {%- set active -%}
        select k.key_name, k.key_hash, l.erasure_id, l.subject_key
        from {{ ledger['keys'] }} as k
        inner join {{ ledger['ledger'] }} as l on k.erasure_id = l.erasure_id
        where l.status <> 'readmitted'
    {%- endset -%}

    {#- 1. foreign keys: the other keys on the rows of an erasure's subject key -#}
    {%- for subject_key, subject_column in present.items() if present | length > 1 -%}
        {%- for key, column in present.items() if key != subject_key -%}
            {%- set found -%}
                select distinct a.erasure_id, '{{ key }}' as key_name,
                    {{ _gdpr_key_hash(key, 'r.`' ~ column ~ '`') }} as key_hash
                from {{ relation }} as r
                inner join ({{ active }}) as a
                    on a.key_name = '{{ subject_key }}' and a.subject_key = '{{ subject_key }}'
                    and {{ _gdpr_key_hash(subject_key, 'r.`' ~ subject_column ~ '`') }} = a.key_hash
                where r.`{{ column }}` is not null
            {%- endset -%}
            {%- set new_keys -%}
                select f.* from ({{ found }}) as f
                left anti join {{ ledger['keys'] }} as k
                    on k.erasure_id = f.erasure_id and k.key_name = f.key_name and k.key_hash = f.key_hash
            {%- endset -%}
            {%- set count = run_query('select count(*) from (' ~ new_keys ~ ')').rows[0][0] -%}
            {%- if count > 0 -%}
                {%- do run_query('insert into ' ~ ledger['keys'] ~ ' ' ~ new_keys) -%}
                {%- do result.update({'propagated': result['propagated'] + count}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}

    {#- 2. the table, its tombstones and its kept changes (cdc_keep_changes) -#}
    {%- set targets = [(relation, present)] -%}
    {%- for suffix in ['__cdc_tombstones', '__cdc_changes'] -%}
        {%- set beside = adapter.get_relation(database=none, schema=relation.schema,
                                              identifier=relation.identifier ~ suffix) -%}
        {%- if beside is not none -%}
            {%- set beside_columns = adapter.get_columns_in_relation(beside) | map(attribute='name') | map('lower') | list -%}
            {%- set beside_present = {} -%}
            {%- for key, column in present.items() if column | lower in beside_columns -%}
                {%- do beside_present.update({key: column}) -%}
            {%- endfor -%}
            {%- if beside_present -%}{%- do targets.append((beside, beside_present)) -%}{%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for target, keys in targets -%}
        {%- set matches = [] -%}
        {%- for key, column in keys.items() -%}
            {%- do matches.append(_gdpr_key_hash(key, '`' ~ column ~ '`') ~ " in (select key_hash from ("
                                  ~ active ~ ") where key_name = '" ~ key ~ "')") -%}
        {%- endfor -%}
        {%- do _gdpr_delete(ledger, target, matches | join(' or '), run_id, origin, result) -%}
    {%- endfor -%}

    {#- 3. quarantined rows of this model -#}
    {%- set quarantine = adapter.get_relation(database=none, schema=relation.schema, identifier='cdc_quarantine') -%}
    {%- if quarantine is not none -%}
        {%- set matches = [] -%}
        {%- for key, column in mapping.items() -%}
            {%- do matches.append(_gdpr_record_match(key, column, "(select collect_list(key_hash) from ("
                                                     ~ active ~ ") where key_name = '" ~ key ~ "')")) -%}
        {%- endfor -%}
        {%- do _gdpr_delete(ledger, quarantine, "model_name = '" ~ model_name ~ "' and (" ~ matches | join(' or ') ~ ")",
                            run_id, origin, result) -%}
    {%- endif -%}
    {{ return(result) }}
{% endmacro %}
