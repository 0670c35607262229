{#
    Apply one batch of change rows (`source`, a view of the model's SQL) to
    the silver table `target`. Called by the cdc_merge strategy on every run,
    including the first (`initial`: the table is created empty first).

    A run is five named steps, each a macro in its own file; what they share
    (settings, columns, table names) is one `run` dict made here, and the
    rows' counts travel between them by name:
      1. find new files       _cdc_new_files (called by cdc_changes, before
                              this macro: the list is frozen for the run)
      2. read and validate    cdc_changes (typing and reject reasons), then
                              _cdc_order_batch's row conservation check
      3. order and dedupe     _cdc_order_batch: every row's outcome,
                              written to scratch files, ties refused,
                              counts by name (_cdc_batch_counts)
      4. apply                _cdc_apply_batch: quarantine, tombstones,
                              truncates, the MERGE, the kept changes
                              (cdc_keep_changes: _cdc_keep_changes)
      5. record               _cdc_record: file log, expired tombstones
                              to the horizon, run audit

    Why a crash anywhere is safe: only step 5 marks files as read. A crash
    before it leaves them unlogged, so the re-run reads them again, and
    step 4 changes nothing it already did (merges keyed on model+file+row,
    on the key keeping the newest, and a change equal to what is stored is a
    no-op). A run that finds no new file (not even a non-data one) does none
    of this: it writes nothing, not even an audit row.
#}
{% macro cdc_apply(source, target, initial) %}
    {%- set run = _cdc_run(source, target, initial) -%}
    {%- if run['nothing_new'] -%}
        {%- do log('cdc ' ~ model.name ~ ': no new files', info=true) -%}
        {{ return('select 0 as no_new_files') }}
    {%- endif -%}
    {%- do _cdc_prepare_target(run) -%}
    {%- set counts = _cdc_order_batch(run) -%}
    {%- do _cdc_apply_batch(run, counts) -%}
    {{ return(_cdc_record(run, counts)) }}
{% endmacro %}

{#-
    What every step of one run needs, computed once: the settings
    (cdc_config), the batch's columns, the table names, and the temporary
    views cdc_changes left (`listed`: this run's frozen file list;
    `events`: Debezium events skipped per file; `records`: CSV records
    written once, _cdc_csv_records), each none when absent.
    When no new file landed (cdc_changes marked the model's SQL so), only
    {'nothing_new': true}: no statement at all.
-#}
{% macro _cdc_run(source, target, initial) %}
    {#- nothing new landed for this model: nothing to read, write or log -#}
    {%- if not initial and _cdc_nothing_new(model.compiled_code or '') -%}
        {{ return({'nothing_new': true}) }}
    {%- endif -%}
    {%- set listed = this.identifier ~ '__cdc_files' -%}
    {%- set events = this.identifier ~ '__cdc_events' -%}
    {%- set records = _cdc_batch_name() ~ '_records' -%}
    {%- set views = run_query("show tables like '" ~ [listed, events, records] | join('|') ~ "'").columns[1].values() | list -%}
    {%- set cfg = cdc_config() -%}
    {#- a small batch (cdc_adaptive_min_bytes) runs without adaptive query
        execution: its query stages would each be a Spark job (measured
        2026-11-27, the 2-core machine, a 6-change batch: 51-54 jobs and
        14.5-17.5 s per model run with it, 32-35 jobs and 12.6-15.5 s
        without); _cdc_record resets it, and a run that fails midway is
        followed by a run that sets it again -#}
    {%- set facts = _cdc_new_files_facts(model.compiled_code or '') -%}
    {%- set new_bytes = facts['bytes'] if facts else none -%}
    {#- a CSV batch's records were written with this setting, in this
        model's compilation (_cdc_csv_records): no statement to repeat -#}
    {%- set adaptive = _cdc_adaptive(new_bytes, cfg) if records | lower in views
                       else _cdc_set_adaptive(new_bytes, cfg) -%}
    {%- set source_columns = adapter.get_columns_in_relation(source) -%}
    {%- set names = source_columns | map(attribute='name') | list -%}
    {#- (the settings' column names checked, and spelled as the columns) -#}
    {%- set cfg = cdc_config(check_columns=names) -%}
    {%- set transient = cdc_column_names('transient') -%}
    {#- a model that reads cdc_changes() (its file list is here) and leaves
        out the transient columns would skip the parse's rejects, the row
        check, TOAST and undeclared columns without a word -#}
    {%- set dropped = transient | reject('in', names) | list -%}
    {%- if listed | lower in views and dropped -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': it reads cdc_changes() but does not "
            ~ "select " ~ dropped | join(', ') ~ ", which carry the rows to quarantine, the rows per file, "
            ~ "TOAST placeholders and undeclared columns to cdc_apply. Nothing was applied. Select "
            ~ "{{ cdc_columns() }} (or *) from the changes, next to the model's own columns.") -%}
    {%- endif -%}
    {%- set data_columns = [] -%}
    {%- for column in source_columns if column.name not in transient -%}
        {%- do data_columns.append(column) -%}
    {%- endfor -%}
    {#- soft mode adds is_deleted and deleted_at to the table: a column of
        the model with either name (the source's own flag, say) would meet
        them in the table's definition -#}
    {%- set taken = data_columns | map(attribute='name') | map('lower') | select('in', ['is_deleted', 'deleted_at']) | list -%}
    {%- if cfg['delete_mode'] == 'soft' and taken -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': cdc_delete_mode soft adds the columns "
            ~ "is_deleted and deleted_at to the table, and the model selects a column named "
            ~ taken | join(' and ') ~ ". Nothing was applied. Rename it in the model (e.g. `"
            ~ taken[0] ~ " as source_" ~ taken[0] ~ "`), or use cdc_delete_mode: hard.") -%}
    {%- endif -%}
    {%- set schema = target.schema -%}
    {%- set run = {
        'cfg': cfg,
        'source': source,
        'target': target,
        'initial': initial,
        'schema': schema,
        'names': names,
        'data_columns': data_columns,
        'soft': cfg['delete_mode'] == 'soft',
        'listed': listed if listed | lower in views else none,
        'ignored_files': facts['ignored'] if facts else none,
        'events': events if events | lower in views and _cdc_source_format() == 'debezium' else none,
        'records': records if records | lower in views else none,
        'batch': _cdc_batch_name(),
        'tombstones': schema ~ '.' ~ target.identifier ~ '__cdc_tombstones',
        'horizon': schema ~ '.' ~ target.identifier ~ '__cdc_horizon',
        'changes': _cdc_changes_relation(target) if cfg['keep_changes'] else none,
        'toast': '_cdc_unavailable' in names and _cdc_source_format() == 'debezium',
        'partial': _cdc_partial_columns(cfg, data_columns),
        'has_tombstones': cfg['delete_mode'] != 'soft' and cfg['delete_when'] | string | trim | lower != 'false',
        'key_list': none,
        'small_tables': false,
        'key_types': {},
        'nothing_new': false,
        'adaptive': adaptive,
    } -%}
    {#- soft mode, a delete's values (_cdc_soft_delete_values): resolved
        from the key's changes before it one at a time, as partial updates
        are (_cdc_partial_updates), on a model with partial updates or
        Debezium TOAST placeholders; else those of the key's newest insert
        or update in the batch (the carry); a change log's are its own -#}
    {%- do run.update({'resolve': run['partial'] | length > 0
                                  or (run['soft'] and run['toast'] and not cfg['change_log']
                                      and _cdc_carried_columns(cfg, data_columns) | length > 0)}) -%}
    {%- do run.update({'carry': run['soft'] and not run['resolve'] and not cfg['change_log']}) -%}
    {{ return(run) }}
{% endmacro %}

{#- Whether a run uses adaptive query execution: yes (Spark's default)
    unless the run's new files (`new_bytes`, none when unknown) are fewer
    bytes than cdc_adaptive_min_bytes. -#}
{% macro _cdc_adaptive(new_bytes, cfg) %}
    {{ return(new_bytes is none or new_bytes >= cfg['adaptive_min_bytes'] | int) }}
{% endmacro %}

{#- Sets the session's adaptive query execution as _cdc_adaptive decides;
    returns whether it is on. -#}
{% macro _cdc_set_adaptive(new_bytes, cfg) %}
    {%- set adaptive = _cdc_adaptive(new_bytes, cfg) -%}
    {%- do run_query('reset spark.sql.adaptive.enabled' if adaptive else 'set spark.sql.adaptive.enabled=false') -%}
    {{ return(adaptive) }}
{% endmacro %}
