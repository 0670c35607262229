{#
    The CDC settings of the current model, validated, with defaults.

    Model config keys (folder defaults live in dbt_project.yml):
      unique_key                  column or list of columns (required)
      cdc_sequence_by             columns ordering the changes of one key, in
                                  priority order (default: _cdc_phase,
                                  _cdc_commit_ts, _cdc_change_seq for a DMS
                                  source; _cdc_phase, _cdc_change_seq, the LSN
                                  alone, for a Debezium source)
      cdc_operation_column        default _cdc_op
      cdc_operations              accepted operation values (default I, U, D;
                                  a Debezium source also T, truncate)
      cdc_delete_when             SQL predicate marking a delete (default _cdc_op = 'D')
      cdc_truncate_when           SQL predicate marking a truncate of the whole
                                  table (default _cdc_op = 'T'); 'false' in a
                                  change log keeps it as an event (null key)
      cdc_delete_mode             hard | soft (soft keeps the row with
                                  is_deleted = true and deleted_at)
      cdc_tombstone_retention_hours  how long a hard delete is remembered to
                                  reject late, older changes (default 168);
                                  after that a change older than the newest
                                  forgotten delete, for a key the table does
                                  not hold, is quarantined late_beyond_retention
      cdc_exclude_from_update     columns written on insert only
      cdc_ignore_null_updates     true: a null in an update keeps the value
                                  before it (both: _cdc_partial_updates)
      cdc_deleted_at_column       soft mode: where deleted_at comes from
                                  (default _cdc_commit_ts)
      cdc_write_mode              Iceberg write.merge/update/delete.mode of the
                                  table and its kept changes (default
                                  merge-on-read, or copy-on-write; set on a
                                  table made before at its next run:
                                  _cdc_prepare_target)
      cdc_keep_changes            true: also keep every change the run reads
                                  (not held, not rejected), one row per key
                                  and sequence, in `<table>__cdc_changes`,
                                  which a change-log model selects from with
                                  cdc_change_log() (default false)
      cdc_key_list_max            the most distinct keys a batch may have for
                                  the statements that join the table to
                                  filter it by the batch's keys first
                                  (_cdc_batch_keys; default 1000; 0: never;
                                  without a list the MERGE filters the table
                                  by a bloom filter of them, _cdc_run_merge);
                                  also the most entities a replace_by_key
                                  model's MERGE lists (replace_by_key_sql)
      cdc_key_filter_min_bytes    the tables a run joins by key (the table,
                                  its tombstones, its kept changes) are
                                  filtered by the batch's keys (the key list,
                                  the semi join, the bloom filter) only when
                                  one of them may hold this many bytes of
                                  files or more (default 1048576, 1 MiB; 0:
                                  always): smaller ones are read whole, which
                                  costs less than the key list's Spark job
                                  (measured 2026-12-03, a 7-change batch: a
                                  run 0.6 s shorter on 200 stored rows, 1.1 s
                                  on 60,000 (270 KB), the same on 300,000
                                  (1 MB))
      cdc_adaptive_min_bytes      a run whose new files hold fewer bytes runs
                                  its statements with Spark's adaptive query
                                  execution off (default 1048576, 1 MiB; 0:
                                  always on): on a small batch each adaptive
                                  query stage is a Spark job of its own and
                                  adapts nothing
    A setting given as 0, false or an empty list keeps that value; only an
    absent setting takes the default. With `check_columns` (the model's
    columns), a column a setting names (unique_key, cdc_sequence_by,
    cdc_operation_column, cdc_exclude_from_update) must be one of them, in
    any letter case, and is returned spelled as that column.

    Derived (not a setting):
      can_truncate                whether a row can be an applicable truncate:
                                  not when cdc_truncate_when is 'false' (a
                                  change log), nor when the default predicate
                                  meets an operation list without T (such a
                                  row is quarantined as unknown_op)
      change_log                  whether the model is a change log: keyed by
                                  a column of its sequence, so each change is
                                  a row of its own (no partial updates, no
                                  soft-delete values from earlier changes)
#}
{% macro cdc_config(check_columns=none) %}
    {%- set where = "model '" ~ model.name ~ "'" -%}
    {%- set file_format = config.get('file_format') -%}
    {%- if file_format != 'iceberg' -%}
        {%- do exceptions.raise_compiler_error(
            where ~ ": incremental_strategy 'cdc_merge' needs an Iceberg table, but file_format is '"
            ~ file_format ~ "'. Set file_format='iceberg' in its config() or in dbt_project.yml.") -%}
    {%- endif -%}
    {%- set unique_key = config.get('unique_key') -%}
    {%- if not unique_key -%}
        {%- do exceptions.raise_compiler_error(
            where ~ ": incremental_strategy 'cdc_merge' needs unique_key. Add unique_key='<column>' "
            ~ "(or a list of columns) to its config().") -%}
    {%- endif -%}
    {%- set keys = [unique_key] if unique_key is string else unique_key | list -%}
    {%- set default_truncate = "_cdc_op = 'T'" -%}
    {%- set cfg = {
        'keys': keys,
        'sequence_by': _cdc_setting('cdc_sequence_by', _cdc_default_sequence()),
        'operation_column': _cdc_setting('cdc_operation_column', '_cdc_op'),
        'operations': _cdc_setting('cdc_operations', ['I', 'U', 'D', 'T'] if _cdc_source_format() == 'debezium'
                                                     else ['I', 'U', 'D']),
        'delete_when': _cdc_setting('cdc_delete_when', "_cdc_op = 'D'"),
        'truncate_when': _cdc_setting('cdc_truncate_when', default_truncate),
        'delete_mode': _cdc_setting('cdc_delete_mode', 'hard'),
        'deleted_at_column': _cdc_setting('cdc_deleted_at_column', '_cdc_commit_ts'),
        'tombstone_retention_hours': _cdc_setting('cdc_tombstone_retention_hours', 168),
        'exclude_from_update': _cdc_setting('cdc_exclude_from_update', []),
        'ignore_null_updates': _cdc_setting('cdc_ignore_null_updates', false),
        'write_mode': _cdc_setting('cdc_write_mode', 'merge-on-read'),
        'keep_changes': _cdc_setting('cdc_keep_changes', false),
        'key_list_max': _cdc_key_list_max(),
        'adaptive_min_bytes': _cdc_setting('cdc_adaptive_min_bytes', 1048576),
        'key_filter_min_bytes': _cdc_setting('cdc_key_filter_min_bytes', 1048576),
    } -%}
    {%- for entry in ['sequence_by', 'exclude_from_update'] if cfg[entry] is string -%}
        {%- do cfg.update({entry: [cfg[entry]]}) -%}
    {%- endfor -%}
    {%- set truncate_when = cfg['truncate_when'] | string | trim -%}
    {%- do cfg.update({'can_truncate': truncate_when | lower != 'false'
            and not (truncate_when == default_truncate and cfg['operation_column'] | lower == '_cdc_op'
                     and 'T' not in cfg['operations'])}) -%}
    {%- if cfg['delete_mode'] not in ('hard', 'soft') -%}
        {%- do exceptions.raise_compiler_error(
            where ~ ": cdc_delete_mode is '" ~ cfg['delete_mode'] ~ "'; set it to 'hard' or 'soft'.") -%}
    {%- endif -%}
    {%- do _iceberg_write_mode_properties(cfg['write_mode'], 'cdc_write_mode') -%}
    {%- if check_columns is not none -%}
        {#- each column a setting names, spelled as the model's column (the
            names are compared in lowercase, as Spark compares them) -#}
        {%- set spelled = {} -%}
        {%- for column in check_columns -%}{%- do spelled.update({column | lower: column}) -%}{%- endfor -%}
        {%- for setting, entry in [('unique_key', 'keys'), ('cdc_sequence_by', 'sequence_by'),
                                   ('cdc_operation_column', 'operation_column'),
                                   ('cdc_exclude_from_update', 'exclude_from_update')] -%}
            {%- set columns = [cfg[entry]] if entry == 'operation_column' else cfg[entry] -%}
            {%- for column in columns -%}
                {%- if column | lower not in spelled -%}
                    {%- do exceptions.raise_compiler_error(
                        where ~ ": " ~ setting ~ " names column '" ~ column ~ "', which the model does not have. "
                        ~ "Known columns: " ~ check_columns | join(', ') ~ ". Fix " ~ setting ~ " in its config().") -%}
                {%- endif -%}
            {%- endfor -%}
            {%- set named = [] -%}
            {%- for column in columns -%}{%- do named.append(spelled[column | lower]) -%}{%- endfor -%}
            {%- do cfg.update({entry: named[0] if entry == 'operation_column' else named}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- do cfg.update({'change_log': cfg['sequence_by'] | select('in', cfg['keys']) | list | length > 0}) -%}
    {{ return(cfg) }}
{% endmacro %}

{#- a CDC setting from meta (where dbt wants custom keys) or from config();
    `default` when it is given in neither -#}
{% macro _cdc_setting(key, default=none) %}
    {%- set value = config.meta_get(key) if config.meta_get is defined else none -%}
    {%- if value is none -%}
        {%- set value = (config.get('meta') or {}).get(key) -%}
    {%- endif -%}
    {%- if value is none -%}
        {%- set value = config.get(key) -%}
    {%- endif -%}
    {{ return(default if value is none else value) }}
{% endmacro %}

{#- cdc_key_list_max (see cdc_config): read by CDC models and by
    replace_by_key models alike -#}
{% macro _cdc_key_list_max() %}
    {{ return(_cdc_setting('cdc_key_list_max', 1000) | int) }}
{% endmacro %}

{#- Log order of the model's bronze source: DMS writes a commit timestamp and
    a change sequence (AR_H_CHANGE_SEQ) that breaks its ties; Debezium's LSN
    alone is the commit order, and source.ts_ms can disagree with it. -#}
{% macro _cdc_default_sequence() %}
    {%- if _cdc_source_format() == 'debezium' -%}
        {{ return(['_cdc_phase', '_cdc_change_seq']) }}
    {%- endif -%}
    {{ return(['_cdc_phase', '_cdc_commit_ts', '_cdc_change_seq']) }}
{% endmacro %}

{#- The format (csv, parquet, debezium) of the bronze source the current
    model reads; none when it reads no bronze source. -#}
{% macro _cdc_source_format() %}
    {%- for unique_id in model.depends_on.nodes if unique_id.startswith('source.') and execute -%}
        {%- set node = graph.sources.get(unique_id) -%}
        {%- if node is not none and bronze_is_external(node) -%}
            {{ return(bronze_external_config(node)['format']) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}
