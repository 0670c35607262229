{#
    The change log of a CDC model, fed by the model's own run (one reader
    per source: the files are read, validated and cleaned once, by the
    current-state model, and its change-log model selects from what that
    run kept; no cleaning is written twice).

    With `cdc_keep_changes: true` a run keeps every change it read that is
    neither held nor quarantined (by the parse or by the batch's own rules,
    e.g. late_beyond_retention), whatever its outcome in the current state
    (applied, or superseded by a later change of its key), in
    `<table>__cdc_changes`: the model's columns, one row per key and
    sequence (a change repeated in several files once, from the first file
    and row that carry it; a change already kept is left as it is, so a
    re-run after a crash adds nothing), deletes and truncates as rows (a
    truncate with a null key). A Debezium TOAST column a change left
    unchanged is kept with the entity's value before the change
    (_cdc_fill_from_log). A model selects from it with
    cdc_change_log(ref('<model>')).
#}
{% macro _cdc_keep_changes(run, counts) %}
    {%- set cfg = run['cfg'] -%}
    {%- set keys = _cdc_changes_keys(cfg) -%}
    {#- the settings of a change log: a row per key and sequence, a delete is a row -#}
    {%- set log_cfg = {} -%}
    {%- do log_cfg.update(cfg) -%}
    {%- do log_cfg.update({'keys': keys, 'delete_mode': 'hard', 'exclude_from_update': [],
                           'ignore_null_updates': false, 'change_log': true}) -%}
    {%- set evolved = {'added': [], 'columns': []} -%}
    {%- if '_cdc_extra' in run['names'] -%}
        {%- set evolved = _cdc_add_undeclared_columns(run['changes'], run['data_columns'],
                              (counts['kept_undeclared'] or '').split(',') | reject('equalto', '') | list) -%}
    {%- endif -%}
    {%- set stored = adapter.get_columns_in_relation(run['changes']) | map(attribute='name') | list -%}
    {%- set columns = run['data_columns'] | map(attribute='name') | list
                      + (['_cdc_extra'] if '_cdc_extra' in run['names'] else []) -%}
    {%- set filled = run['toast'] and counts['placeholders'] > 0 -%}
    {#- each change once: its first copy, ranked with the batch's outcomes
        (_cdc_order_batch) -#}
    {%- set kept -%}
        (select {% for name in columns %}`{{ name }}`, {% endfor %}false as _cdc_is_delete
        from {{ '(' ~ _cdc_fill_from_log(run, run['changes'], stored) ~ ') as filled'
                if filled else run['batch'] }}
        where _cdc_copy = 1)
    {%- endset -%}
    {%- set keys_in = _cdc_keys_in(run, 't') -%}
    {%- set merge = _cdc_merge_sql(run['changes'], kept, log_cfg, run['data_columns'], stored,
                                   false, evolved['columns'], empty_target=run['initial'],
                                   keys_in=keys_in) -%}
    {%- do _cdc_run_merge(run, merge, from_scratch=not filled) -%}
{% endmacro %}

{#- Which rows of the batch the change log keeps: neither held nor quarantined -#}
{% macro _cdc_kept() %}_cdc_final_reason is null and not _cdc_held{% endmacro %}

{#- The key of the entity a change is about: the model's keys without its
    sequence columns (a change log's key includes them) -#}
{% macro _cdc_entity_keys(cfg) %}
    {%- set entity = cfg['keys'] | reject('in', cfg['sequence_by']) | list -%}
    {{ return(entity if entity else cfg['keys']) }}
{% endmacro %}

{#- What identifies a kept change: the model's keys, then its sequence -#}
{% macro _cdc_changes_keys(cfg) %}
    {{ return(cfg['keys'] + cfg['sequence_by'] | reject('in', cfg['keys']) | list) }}
{% endmacro %}

{#- The table of a model's kept changes (cdc_keep_changes) -#}
{% macro _cdc_changes_relation(relation) %}
    {{ return(relation.incorporate(path={'identifier': relation.identifier ~ '__cdc_changes'}, type='table')) }}
{% endmacro %}

{#
    What a change-log model selects from: the changes the CDC model
    `relation` (a ref()) kept, in `<table>__cdc_changes`. Fails, naming
    the fix, when that model does not keep them.
#}
{% macro cdc_change_log(relation) %}
    {%- if execute -%}
        {%- set found = [] -%}
        {%- for node in graph.nodes.values() if node.resource_type == 'model'
                and node.schema | lower == relation.schema | lower and node.alias | lower == relation.identifier | lower -%}
            {%- do found.append(node) -%}
        {%- endfor -%}
        {%- set node_config = found[0].config if found else none -%}
        {%- set keeps = node_config is not none and (
                (node_config.meta or {}).get('cdc_keep_changes', node_config.get('cdc_keep_changes'))) -%}
        {%- if not keeps -%}
            {%- do exceptions.raise_compiler_error(
                "model '" ~ model.name ~ "': cdc_change_log(" ~ relation ~ ") reads the changes that model keeps, "
                ~ "but it does not keep them. Set meta={'cdc_keep_changes': true} in the config() of "
                ~ (found[0].name if found else relation.identifier) ~ " (a --full-refresh of it then fills them).") -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(_cdc_changes_relation(relation)) }}
{% endmacro %}
