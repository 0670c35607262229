{#
    Soft mode: the values a delete leaves on the row it marks deleted.

    One change at a time, a soft delete writes only its bookkeeping (the
    sequence, the operation, where it came from, `deleted_at`): the row
    keeps the values of the key's last insert or update, since a delete's
    own values may be only its key (a Debezium `before` with the default
    replica identity, a DMS task logging the primary key alone). A batch
    applies each key's newest change only, so where that is a delete, it
    takes the values the key's changes before it in the batch leave, by one
    of two paths (run['resolve'], _cdc_run):

      - the carry, for whole rows: the delete carries the key's newest
        insert or update (`_cdc_carry`: its sequence, its values, its
        columns the model does not declare) and writes them
        (`_cdc_carries`, _cdc_order_batch) when it is newer than the stored
        row and than the newest truncate. The MERGE writes them with the
        delete, the carried sequence checked again against the row it
        matches (_cdc_merge_sql), and their undeclared columns are added to
        the table (listed by _cdc_batch_counts, added by _cdc_apply_batch).
        Deletes between them change no value, so the newest insert or
        update is the one, whatever came between. Otherwise the delete
        writes its bookkeeping alone on a stored row, its own values on a
        key with no row.
      - the resolution, where a change may not carry every column: a model
        with partial updates (cdc_ignore_null_updates,
        cdc_exclude_from_update) or Debezium TOAST placeholders. The delete
        holds the values _cdc_partial_updates gives it, from the changes
        before it one at a time, and the MERGE writes them, a column none
        was given keeping its stored value; the columns the model does not
        declare as the newest change that gave values wrote them whole
        (none: as stored). Runs whose batch applies no delete skip it
        unless the model has partial updates.

    A change log (keyed by its sequence: one change per row) does neither.
    Where a truncate came between the key's last insert or update and the
    delete (a change older than the newest truncate is gone with it, in soft
    mode too, where one change at a time the truncate would have kept its
    values), the row differs from the one the changes one at a time would
    leave. README, Known gaps.
#}

{#- The columns a change writes besides its key: what describes the change
    itself (sequence, operation, where it came from) is the delete's own. -#}
{% macro _cdc_change_bookkeeping(cfg) %}
    {{ return(cfg['sequence_by'] + [cfg['operation_column'], '_cdc_file', '_cdc_row', '_cdc_file_modified_at']) }}
{% endmacro %}

{#- The columns a soft delete takes from the key's newest insert or update
    of the batch: every column of the model but its keys and bookkeeping. -#}
{% macro _cdc_carried_columns(cfg, data_columns) %}
    {#- (settings name columns in any case) -#}
    {%- set fixed = (cfg['keys'] + _cdc_change_bookkeeping(cfg)) | map('lower') | list -%}
    {%- set carried = [] -%}
    {%- for column in data_columns if column.name | lower not in fixed -%}
        {%- do carried.append(column.name) -%}
    {%- endfor -%}
    {{ return(carried) }}
{% endmacro %}

{#- In the batch's ranking, on a key's newest change if a delete (windows
    of a key's changes, newest first: `by_key`; `whole`, the whole key in
    its frame): the key's newest insert or update. -#}
{% macro _cdc_carry_sql(run, by_key, whole) %}
    {%- set names = _cdc_carried_columns(run['cfg'], run['data_columns']) -%}
    case when _cdc_is_delete and row_number() over {{ by_key }} = 1 then first_value(case when not _cdc_is_delete then named_struct(
        '_cdc_seq', {{ _cdc_seq_struct(none, run['cfg']['sequence_by']) }}
        {%- if '_cdc_extra' in run['names'] %},
        '_cdc_extra', _cdc_extra
        {%- endif %}
        {%- for name in names %}, {{ sql_string(name) }}, `{{ name }}`{% endfor -%}
    ) end, true) over {{ whole }} end as _cdc_carry
{% endmacro %}
