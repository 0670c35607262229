{#
    Before a CDC run reads its batch: the schema's bookkeeping tables
    (_cdc_ensure_log_tables); on the first run or a full refresh an empty
    table with the model's columns, its tombstones, horizon and file log
    entries dropped; on later runs the table's schema evolved to the model's
    columns (_cdc_evolve_schema). Then the tables the run reads beside the
    target: the tombstones of hard deletes (a hard-delete model that is not a
    change log) and the horizon (purged tombstones, applied truncates).
    With cdc_keep_changes, the same for the table of kept changes
    (`<table>__cdc_changes`; created when the setting is new).
    Sets run['target_columns'] and run['target_types'] (lower-case name ->
    type), the table's columns before the batch, and run['tombstones_empty']
    and run['horizon_empty']: whether the table is known to hold no row
    (_cdc_known_empty), so that the run does not look it up.
#}
{% macro _cdc_prepare_target(run) %}
    {%- set cfg = run['cfg'] -%}
    {%- set target = run['target'] -%}
    {%- set schema = run['schema'] -%}
    {%- do _cdc_ensure_log_tables(schema) -%}
    {%- if run['initial'] -%}
        {%- do _cdc_create_table(target, run['data_columns'], cfg, run['soft']) -%}
        {%- do run_query('drop table if exists ' ~ run['tombstones']) -%}
        {%- do run_query('drop table if exists ' ~ run['horizon']) -%}
        {%- do run_query('delete from ' ~ schema ~ '.cdc_file_log where model_name = ' ~ sql_string(model.name)) -%}
    {%- else -%}
        {#- a key or sequence column widened widens the tombstones and the
            horizon too (no statement when none widens) -#}
        {%- set along = [] -%}
        {%- for table in [run['tombstones'], run['horizon']] -%}
            {%- set relation = adapter.get_relation(database=none, schema=schema, identifier=table.split('.')[-1]) -%}
            {%- if relation is not none -%}
                {%- do along.append(relation) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- set evolved = _cdc_evolve_schema(target, run['data_columns'], along,
                                             run['data_columns'] | selectattr('name', 'in', cfg['keys'] + cfg['sequence_by']) | list) -%}
        {%- do run.update({'target_columns': evolved['names'], 'target_types': evolved['types']}) -%}
        {#- a setting changed since the table was made (tblproperties,
            cdc_write_mode): set for the files written from now on -#}
        {%- do table_properties_apply(target, _cdc_table_properties(cfg)) -%}
    {%- endif -%}
    {%- if run['changes'] -%}
        {%- set kept = none if run['initial']
                       else adapter.get_relation(database=none, schema=schema, identifier=run['changes'].identifier) -%}
        {%- if kept is none -%}
            {%- if not run['initial'] -%}
                {%- do log('cdc ' ~ model.name ~ ': cdc_keep_changes is new, so ' ~ run['changes'] ~ ' keeps the '
                           ~ 'changes from this run on; a --full-refresh of the model fills it from every landed file',
                           info=true) -%}
            {%- endif -%}
            {%- do _cdc_create_table(run['changes'], run['data_columns'], cfg, false, _cdc_changes_keys(cfg)) -%}
        {%- else -%}
            {%- do _cdc_evolve_schema(kept, run['data_columns']) -%}
            {%- do table_properties_apply(kept, _cdc_table_properties(cfg)) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if run['initial'] -%}
        {%- set columns = adapter.get_columns_in_relation(target) -%}
        {%- set types = {} -%}
        {%- for column in columns -%}
            {%- do types.update({column.name | lower: column.data_type | lower | replace(' ', '')}) -%}
        {%- endfor -%}
        {%- do run.update({'target_columns': columns | map(attribute='name') | list, 'target_types': types}) -%}
    {%- endif -%}
    {#- the key and sequence of hard deletes (tombstones) and the horizon:
        purged tombstones (the newest of them: older changes of keys the
        table does not hold may be echoes of a forgotten delete) and applied
        truncates (null keys: every older change is gone) -#}
    {#- (on later runs, only when dbt's listing of the schema at the start
        of the invocation lacks them: a statement less for each) -#}
    {%- for table in [run['tombstones'], run['horizon']] if (table != run['tombstones'] or run['has_tombstones'])
            and (run['initial'] or adapter.get_relation(database=none, schema=schema,
                                                         identifier=table.split('.')[-1]) is none) -%}
        {%- set ddl -%}
            create table if not exists {{ table }} (
                {%- for column in run['data_columns'] if column.name in cfg['keys'] or column.name in cfg['sequence_by'] %}
                `{{ column.name }}` {{ column.data_type }},
                {%- endfor %}
                _cdc_recorded_at timestamp
            ) using iceberg tblproperties ('format-version' = '2')
        {%- endset -%}
        {%- do run_query(ddl) -%}
    {%- endfor -%}
    {%- for name in ['tombstones', 'horizon'] -%}
        {%- do run.update({name ~ '_empty': run['initial'] or _cdc_known_empty(schema, target.identifier ~ '__cdc_' ~ name)}) -%}
    {%- endfor -%}
    {#- the tables the run joins by key, all known to be smaller than
        cdc_key_filter_min_bytes: joined whole (_cdc_order_batch) -#}
    {%- set joined = [target.identifier] + ([run['tombstones'].split('.')[-1]]
                                            if run['has_tombstones'] and not run['tombstones_empty'] else [])
                     + ([run['changes'].identifier] if run['changes'] else []) -%}
    {%- set small = [] -%}
    {%- for identifier in joined if not run['initial'] -%}
        {%- set size = _cdc_known_bytes(schema, identifier) -%}
        {%- if size is not none and size < cfg['key_filter_min_bytes'] | int -%}
            {%- do small.append(identifier) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do run.update({'small_tables': small | length == joined | length and not run['initial']}) -%}
{% endmacro %}

{#- The bytes of the data and delete files of `schema`.`identifier`, an
    Iceberg table, when the invocation began, by the listing dbt cached then
    (no statement): Iceberg's Hive catalog records them at each commit, and
    `show table extended` prints them as its Statistics. None when the
    listing does not say (a table not listed, or created in this
    invocation). Only the run's speed depends on it (_cdc_order_batch): a
    table joined whole or filtered by the batch's keys gives the same
    result, so a size that changed since the listing does no harm. -#}
{% macro _cdc_known_bytes(schema, identifier) %}
    {%- set relation = adapter.get_relation(database=none, schema=schema, identifier=identifier) -%}
    {%- set text = relation.information if relation is not none and relation.information else '' -%}
    {%- set found = modules.re.search('(?m)^Statistics: (\\d+) bytes', text) -%}
    {{ return(found.group(1) | int if found else none) }}
{% endmacro %}

{#- Whether `schema`.`identifier`, an Iceberg table, held no row when the
    invocation began, by the listing dbt cached then (no statement): its
    table properties show no snapshot, or a current snapshot of no record
    (`total-records` counts the data files' rows, deletes aside, so it is
    never below the rows the table holds). False when the listing says
    neither (a table not listed, a catalog that does not show them): the
    run then reads the table. Used for the tables only the model's own run
    writes, and only before it writes them (the tombstones, the horizon):
    a new invocation lists the schema again. Only on the in-process target
    without the build lock (an embedded metastore: one process): on a
    shared catalog dbt lists the schema before the on-run-start hook takes
    the lock, so another build may write the tables after the listing. -#}
{% macro _cdc_known_empty(schema, identifier) %}
    {%- if _lakehouse_lock_enabled() or not (target.name == 'local' or target.get('method') == 'session') -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set relation = adapter.get_relation(database=none, schema=schema, identifier=identifier) -%}
    {%- set text = relation.information if relation is not none and relation.information else '' -%}
    {{ return(modules.re.search('(?m)^Table Properties: \\[(?:.*, )?snapshot-count=0[,\\]]', text) is not none
              or modules.re.search('(?m)^Table Properties: \\[.*current-snapshot-summary=[{][^}]*"total-records":"0"[,}]', text)
                 is not none) }}
{% endmacro %}

{#- An empty Iceberg table (dropped first) with the model's columns, the
    generated ones (soft: is_deleted, deleted_at), the model's
    tblproperties and write mode, written ordered by `order_by` (default:
    the keys). -#}
{% macro _cdc_create_table(table, data_columns, cfg, soft, order_by=none) %}
    {%- do run_query('drop table if exists ' ~ table) -%}
    {%- set properties = _cdc_table_properties(cfg) -%}
    {%- set ddl -%}
        create table {{ table }} (
            {%- for column in data_columns %}
            `{{ column.name }}` {{ column.data_type }},
            {%- endfor %}
            {%- if soft %}
            is_deleted boolean,
            deleted_at timestamp,
            {%- endif %}
            _cdc_loaded_at timestamp,
            _cdc_run_id string
        )
        using iceberg
        {{ partition_cols(label='partitioned by') }}
        tblproperties (
            {%- for name, value in properties.items() %}
            {{ sql_string(name) }} = {{ sql_string(_table_property_text(value)) }}{{ ',' if not loop.last }}
            {%- endfor %}
        )
    {%- endset -%}
    {%- do run_query(ddl) -%}
    {%- do run_query('alter table ' ~ table ~ ' write ordered by ' ~ (order_by or cfg['keys']) | join(', ')) -%}
{% endmacro %}

{#- The properties of a CDC model's tables (its table, its kept changes):
    the model's tblproperties config (dbt_project.yml), then the CDC
    settings', which win (format version 2, cdc_write_mode). -#}
{% macro _cdc_table_properties(cfg) %}
    {%- set properties = {} -%}
    {%- do properties.update(config.get('tblproperties') or {}) -%}
    {%- do properties.update(_iceberg_write_mode_properties(cfg['write_mode'], 'cdc_write_mode')) -%}
    {{ return(properties) }}
{% endmacro %}
