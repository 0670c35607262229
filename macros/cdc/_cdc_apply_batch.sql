{#
    Apply a CDC batch whose outcomes are decided (_cdc_order_batch), each
    write only when there is something to write:
      - quarantined rows into cdc_quarantine (_cdc_quarantine);
      - hard deletes applied recorded as tombstones, one per key (a
        superseded delete leaves none: the stored row, the key's tombstone,
        a truncate or the horizon is as new or newer): by a merge
        keeping the newest (idempotent) when a deleted key has a tombstone
        already, else by an insert (the batch was ranked against the
        tombstones: none of its keys has one);
      - columns the files carry and the YAML does not declare added to the
        table (_cdc_add_undeclared_columns);
      - applied truncates (_cdc_apply_truncate), then the MERGE of the
        applied changes (_cdc_merge_sql; a change equal to what is stored
        is a no-op; with partial updates, each column's value after the
        key's changes, and a soft delete's, _cdc_partial_updates); into
        the table this run created empty, an insert;
      - with cdc_keep_changes, every change read into the model's change
        log table (_cdc_keep_changes).
    Into a change log (this model's kept changes, or a model keyed by the
    sequence), a Debezium TOAST column a change left unchanged goes with the
    entity's value before the change (_cdc_fill_from_log).
    Each merge filters the table it merges into by the batch's keys when
    the batch has a key list (_cdc_batch_keys); without one, the MERGEs into
    the table and into its kept changes filter them by a bloom filter of
    them (_cdc_run_merge).
#}
{% macro _cdc_apply_batch(run, counts) %}
    {%- set cfg = run['cfg'] -%}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set tombstones = run['tombstones'] -%}
    {%- if counts['quarantined'] > 0 -%}
        {%- do _cdc_quarantine(run) -%}
    {%- endif -%}
    {%- if run['has_tombstones'] -%}
        {%- if counts['deletes'] > 0 -%}
            {%- set columns = '`' ~ (keys + seq) | join('`, `') ~ '`' -%}
            {%- set deletes -%}
                select {{ columns }}, current_timestamp() as _cdc_recorded_at
                from {{ run['batch'] }}
                where _cdc_outcome = 'applied' and _cdc_rank = 1 and _cdc_is_delete
            {%- endset -%}
            {%- if counts['tombstoned'] > 0 -%}
                {%- set tomb_merge -%}
                    merge into {{ tombstones }} as t
                    using ({{ deletes }}) as s
                    on {% for key in keys %}t.`{{ key }}` = s.`{{ key }}`{{ ' and ' if not loop.last }}{% endfor %}
                    {%- if _cdc_keys_in(run, 't') %}
                        and {{ _cdc_keys_in(run, 't') }}
                    {%- endif %}
                    when matched and {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }} then update set *
                    when not matched then insert *
                {%- endset -%}
                {%- do run_query(tomb_merge) -%}
            {%- else -%}
                {%- do run_query('insert into ' ~ tombstones ~ ' (' ~ columns ~ ', _cdc_recorded_at)\n' ~ deletes) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
    {%- set evolved = {'added': [], 'columns': []} -%}
    {%- if '_cdc_extra' in run['names'] -%}
        {%- set evolved = _cdc_add_undeclared_columns(run['target'], run['data_columns'],
                              (counts['undeclared'] or '').split(',') | reject('equalto', '') | list,
                              run['target_types']) -%}
    {%- endif -%}
    {%- if counts['truncates'] > 0 -%}
        {%- do _cdc_apply_truncate(run) -%}
    {%- endif -%}
    {%- if counts['applied'] > counts['truncates'] -%}
        {#- a model keyed by the sequence is a change log: a TOAST column
            left unchanged takes the entity's value before the change -#}
        {%- set rows = run['batch'] -%}
        {%- if run['toast'] and counts['placeholders'] > 0 and cfg['change_log'] -%}
            {%- set rows = '(' ~ _cdc_fill_from_log(run, run['target'], run['target_columns']) ~ ') as filled' -%}
        {%- endif -%}
        {#- partial updates: each partial column with the key's value after
            the batch's changes; soft deletes that take their values from
            the changes before them (run['resolve']), when the batch
            applies one (_cdc_partial_updates) -#}
        {%- set partial = _cdc_partial_updates(run, rows)
                          if run['partial'] or (run['resolve'] and counts['deletes'] > 0) else none -%}
        {%- set to_apply = '(select * from ' ~ (partial or rows) ~ " where _cdc_outcome = 'applied' and "
                           ~ ('_cdc_rank = 1' if partial else 'not _cdc_is_truncate') ~ ')' -%}
        {%- set keys_in = _cdc_keys_in(run, 't') -%}
        {%- set merge = _cdc_merge_sql(run['target'], to_apply, cfg, run['data_columns'],
                                       run['target_columns'] + evolved['added'], run['toast'] or run['partial'],
                                       evolved['columns'], empty_target=run['initial'], keys_in=keys_in,
                                       partial=partial is not none, carry=run['carry']) -%}
        {%- do _cdc_run_merge(run, merge, from_scratch=rows == run['batch']) -%}
        {%- if partial -%}
            {%- do run_query('drop view if exists ' ~ partial) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if run['changes'] and counts['kept'] > 0 -%}
        {%- do _cdc_keep_changes(run, counts) -%}
    {%- endif -%}
{% endmacro %}
