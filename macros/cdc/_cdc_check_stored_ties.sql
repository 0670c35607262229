{#
    A tie across runs: a key's newest change in the batch has the sequence
    of the row the table holds or of the key's tombstone (_cdc_same_seq),
    and is not a repeat of it. A repeat (a redelivered file) is superseded;
    any other change cannot be ordered against the stored one, and it would
    be superseded, or applied over a delete, without a word. SQL listing up
    to 20 such keys with their sequence (as JSON), for _cdc_fail_on_ties.
    Run only when the batch has such rows.

    A repeat of the stored row: a change that is not a delete, with the
    same content, of a row not marked deleted (soft mode); or a delete of a
    row marked deleted. A repeat of a tombstone (hard mode): a delete.
    Content compared: the model's columns as the MERGE writes them, except
    keys, sequence, provenance, columns kept on update
    (cdc_exclude_from_update), a NULL under cdc_ignore_null_updates, and a
    column the change kept as stored (Debezium TOAST). A stored value is
    read in the batch's type.
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
    {%- set content_differs = differs | join(' or ') if differs else 'false' -%}
    {%- set stored_deleted = 'coalesce(t.is_deleted, false)' if run['soft'] else 'false' -%}
    {%- set stored = [(run['target'], 't', 'case when s._cdc_is_delete then not ' ~ stored_deleted
                                              ~ ' else ' ~ stored_deleted ~ ' or ' ~ content_differs ~ ' end')] -%}
    {%- if run['has_tombstones'] and not run['tombstones_empty'] -%}
        {%- do stored.append((run['tombstones'], 'd', 'not s._cdc_is_delete')) -%}
    {%- endif %}
    select distinct tie from (
    {%- for table, alias, tie in stored %}
        select to_json(named_struct(
            {%- for key in keys %}'{{ key }}', s.`{{ key }}`, {% endfor -%}
            {%- for column in seq %}'{{ column }}', s.`{{ column }}`{{ ', ' if not loop.last }}{% endfor -%}
        )) as tie
        from {{ run['batch'] }} as s
        join {{ table }} as {{ alias }}
            on {% for key in keys %}{{ alias }}.`{{ key }}` <=> s.`{{ key }}`{{ ' and ' if not loop.last }}{% endfor %}
            and {{ _cdc_seq_struct(alias, seq) }} = {{ _cdc_seq_struct('s', seq) }}
            {%- if _cdc_keys_in(run, alias) %}
            and {{ _cdc_keys_in(run, alias) }}
            {%- endif %}
        where s._cdc_same_seq and ({{ tie }})
        {{- '\n        union all' if not loop.last }}
    {%- endfor %}
    ) as ties
    limit 20
{% endmacro %}
