{#
    Soft mode: the values a delete leaves on the row it marks deleted.

    One change at a time, a soft delete writes only its bookkeeping (the
    sequence, the operation, where it came from, `deleted_at`): the row
    keeps the values of the key's last insert or update, since a delete's
    own values may be only its key (a Debezium `before` with the default
    replica identity, a DMS task logging the primary key alone). A batch
    applies each key's newest change only, so where that is a delete and
    the batch holds an insert or update of the key newer than the stored
    row (and than the newest truncate), the delete carries that change's
    values (`_cdc_carry`: the newest such change, with its sequence, its
    columns the model does not declare, and for Debezium whether it holds
    every value; `_cdc_carries`: whether it is newer than what is stored,
    _cdc_order_batch) and the MERGE writes them with the delete, the
    sequence checked again against the row it matches (_cdc_merge_sql):
    the row the changes one at a time would leave. Deletes between them
    change no value, so the newest insert or update is the one, whatever
    came between.

    Not carried: a Debezium change with a TOAST placeholder (filled or
    not: what it leaves depends on the changes before it); the delete then
    writes its bookkeeping alone, as before. Not for a model with partial
    updates (cdc_ignore_null_updates, cdc_exclude_from_update), whose
    values _cdc_partial_updates resolves, nor a change log (keyed by its
    sequence: one change per row). README, Known gaps.
#}

{#- The columns a change writes besides its key: what describes the change
    itself (sequence, operation, where it came from) is the delete's own. -#}
{% macro _cdc_change_bookkeeping(cfg) %}
    {{ return(cfg['sequence_by'] + [cfg['operation_column'], '_cdc_file', '_cdc_row', '_cdc_file_modified_at']) }}
{% endmacro %}

{#- The columns a soft delete takes from the key's newest insert or update
    of the batch: every column of the model but its keys and bookkeeping. -#}
{% macro _cdc_carried_columns(cfg, data_columns) %}
    {%- set fixed = cfg['keys'] + _cdc_change_bookkeeping(cfg) -%}
    {{ return(data_columns | map(attribute='name') | reject('in', fixed) | list) }}
{% endmacro %}

{#- In the batch's ranking (window `window`: a key's changes, newest
    first, the whole key in its frame), on a delete: the key's newest
    insert or update. -#}
{% macro _cdc_carry_sql(run, window) %}
    {%- set names = _cdc_carried_columns(run['cfg'], run['data_columns']) -%}
    case when _cdc_is_delete then first_value(case when not _cdc_is_delete then named_struct(
        '_cdc_seq', {{ _cdc_seq_struct(none, run['cfg']['sequence_by']) }}
        {%- if run['toast'] %},
        '_cdc_whole', size(_cdc_unavailable) = 0 and size(_cdc_filled_from) = 0
        {%- endif %}
        {%- if '_cdc_extra' in run['names'] %},
        '_cdc_extra', _cdc_extra
        {%- endif %}
        {%- for name in names %}, {{ sql_string(name) }}, `{{ name }}`{% endfor -%}
    ) end, true) over {{ window }} end as _cdc_carry
{% endmacro %}
