{#
    A tie across runs: a key's newest change in the batch has the sequence
    of the row the table holds (_cdc_same_seq) and other content. A repeat
    of the stored change (a redelivered file) is superseded; a change with
    other content cannot be ordered against it, and it would be superseded
    without a word. SQL listing up to 20 such keys with their sequence (as
    JSON), for _cdc_fail_on_ties. Run only when the batch has such rows.

    Compared: the model's columns as the MERGE writes them, except keys,
    sequence, provenance, columns kept on update (cdc_exclude_from_update),
    a NULL under cdc_ignore_null_updates, and a column the change kept as
    stored (Debezium TOAST). A stored value is read in the batch's type.
#}
{% macro _cdc_stored_ties_sql(run) %}
    {%- set cfg = run['cfg'] -%}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set skipped = keys + seq + cfg['exclude_from_update'] + ['_cdc_file', '_cdc_row', '_cdc_file_modified_at'] -%}
    {%- set differs = [] -%}
    {%- for column in run['data_columns'] if column.name not in skipped and column.name in run['target_columns'] -%}
        {%- set name = '`' ~ column.name ~ '`' -%}
        {%- if 'map<' in column.data_type | lower -%}
            {%- set test = 'not to_json(s.' ~ name ~ ') <=> to_json(t.' ~ name ~ ')' -%}
        {%- else -%}
            {%- set test = 'not s.' ~ name ~ ' <=> cast(t.' ~ name ~ ' as ' ~ column.data_type ~ ')' -%}
        {%- endif -%}
        {%- if cfg['ignore_null_updates'] -%}
            {%- set test = test ~ ' and s.' ~ name ~ ' is not null' -%}
        {%- endif -%}
        {%- if run['toast'] -%}
            {%- set test = test ~ ' and not array_contains(s._cdc_keep_stored, ' ~ sql_string(column.name) ~ ')' -%}
        {%- endif -%}
        {%- do differs.append('(' ~ test ~ ')') -%}
    {%- endfor -%}
    {%- set keys_in = _cdc_keys_in(run, 't') %}
    select distinct to_json(named_struct(
        {%- for key in keys %}'{{ key }}', s.`{{ key }}`, {% endfor -%}
        {%- for column in seq %}'{{ column }}', s.`{{ column }}`{{ ', ' if not loop.last }}{% endfor -%}
    )) as tie
    from {{ run['batch'] }} as s
    join {{ run['target'] }} as t
        on {% for key in keys %}t.`{{ key }}` <=> s.`{{ key }}`{{ ' and ' if not loop.last }}{% endfor %}
        and {{ _cdc_seq_struct('t', seq) }} = {{ _cdc_seq_struct('s', seq) }}
        {%- if keys_in %}
        and {{ keys_in }}
        {%- endif %}
    where s._cdc_same_seq and ({{ differs | join(' or ') if differs else 'false' }})
    limit 20
{% endmacro %}
