{#
    Incremental gold: a run recomputes only the entities (orders, customers,
    days, products) whose rows could have changed since the table's last
    build, and `replace_by_key` replaces exactly those (deleting the ones no
    longer produced). A fact model:

        {%- set run = gold_incremental_run() -%}
        {%- set changed -%}
            {{ cdc_changed_keys(run, ref('slv_retail__orders'), 'order_id') }}
            union
            select order_id from {{ ref('slv_retail__orders') }}
            where customer_id in ({{ dimension_changed_keys(run, ref('dim_customer'), 'customer_id') }})
        {%- endset %}
        ...
            from {{ ref('slv_retail__orders') }}
            where {{ gold_changed_only(run, 'order_id', changed) }}

    A mart reads the rows its fact input changed, old and new images
    (`gold_changed_rows`: Iceberg's changelog between the fact's snapshot it
    last read and the current one), and recomputes the groups they fall in:

        select customer_id from ({{ gold_changed_rows(run, ref('fct_orders'), ['order_id']) }})

    The table remembers when it last read its inputs and the snapshot of
    each (table properties `lakehouse.gold.read_at`,
    `lakehouse.gold.snapshot.<md5 of the input's name>`: _gold_snapshot_mark;
    set by `gold_mark` after each build)
    and a hash of its reference tables (meta `gold_references`: seeds, whose
    rows carry no load time). A run recomputes everything (the first build, a
    full refresh, a changed reference table, a truncate of a CDC input, a
    dimension without a load time, an input rebuilt or whose snapshot was
    expired since) or only the changed entities.
    An input rebuilt from scratch (its own --full-refresh) needs the same
    for the facts reading it (`dbt build --full-refresh --select model+`).
#}

{#- The run's state: `since` (SQL timestamp of the last read, none on a full
    recompute), `full`, `unchanged` (no input table has a snapshot other
    than the one read last time, and the reference tables are the same:
    nothing to recompute, no query of the inputs at all) and the table's
    marks. Read once per model run. -#}
{% macro gold_incremental_run() %}
    {%- set run = {'since': none, 'full': true, 'unchanged': false, 'marks': {}} -%}
    {%- if execute and is_incremental() and flags.WHICH in ('run', 'build') -%}
        {%- set marks = table_properties(this) -%}
        {%- do run.update({'marks': marks}) -%}
        {%- if 'lakehouse.gold.read_at' in marks
              and marks.get('lakehouse.gold.references', '') == _gold_references_hash() -%}
            {%- do run.update({'since': 'timestamp_micros(' ~ marks['lakehouse.gold.read_at'] ~ ')',
                               'full': false}) -%}
            {%- set moved = [] if _gold_inputs_covered() else ['an input that is not a table'] -%}
            {%- for name, snapshot in _gold_input_snapshots().items() -%}
                {%- if snapshot is none or marks.get(_gold_snapshot_mark(name)) != snapshot | string -%}
                    {%- do moved.append(name) -%}
                {%- endif -%}
            {%- endfor -%}
            {%- if moved | length == 0 -%}
                {%- do log(model.name ~ ': no input changed since the last build, nothing to recompute', info=true) -%}
                {%- do run.update({'unchanged': true}) -%}
            {%- endif -%}
        {%- else -%}
            {%- do log(model.name ~ ': no read mark or a reference table changed, every entity recomputed',
                       info=true) -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(run) }}
{% endmacro %}

{#- Whether the change queries below have nothing to find: a full
    recompute (every entity anyway) or no input changed. -#}
{% macro _gold_nothing_to_find(run) %}
    {{ return(run['full'] or run['unchanged']) }}
{% endmacro %}

{#- The keys (`columns`, SQL select list) of a CDC model's rows changed or
    deleted since the run's mark: rows loaded since, tombstones recorded
    since (kept ones and those already moved to the horizon). A truncate
    since makes the run recompute everything. -#}
{% macro cdc_changed_keys(run, relation, columns) %}
    {%- if _gold_nothing_to_find(run) -%}
        {{ return('select ' ~ columns ~ ' from ' ~ relation ~ ' where false') }}
    {%- endif -%}
    {%- set since = run['since'] -%}
    {%- set parts = ['select ' ~ columns ~ ' from ' ~ relation ~ ' where _cdc_loaded_at > ' ~ since] -%}
    {%- for suffix in ['__cdc_tombstones', '__cdc_horizon'] -%}
        {%- set side = adapter.get_relation(relation.database, relation.schema, relation.identifier ~ suffix) -%}
        {%- if side is not none -%}
            {%- do parts.append('select ' ~ columns ~ ' from ' ~ side ~ ' where _cdc_recorded_at > ' ~ since) -%}
            {%- if suffix == '__cdc_horizon' -%}
                {%- set truncates -%}
                    select count(*) from {{ side }}
                    where _cdc_recorded_at > {{ since }}
                        {%- for key in columns.split(',') %} and {{ key | trim }} is null{% endfor %}
                {%- endset -%}
                {%- if run_query(truncates).rows[0][0] > 0 -%}
                    {%- do log(model.name ~ ': ' ~ relation.identifier ~ ' was truncated since the last build, '
                               ~ 'every entity recomputed', info=true) -%}
                    {%- do run.update({'full': true}) -%}
                {%- endif -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(parts | join('\n    union\n    ')) }}
{% endmacro %}

{#- The entity keys (or any `column`) of the rows of an SCD2 dimension
    rewritten since the run's mark (their `_dim_loaded_at`); a dimension that
    is a view (the snapshot kind, whose rows carry no write time) or lacks
    that column makes the run recompute everything. -#}
{% macro dimension_changed_keys(run, relation, column) %}
    {%- set stored = none if _gold_nothing_to_find(run)
                     else adapter.get_relation(relation.database, relation.schema, relation.identifier) -%}
    {%- if stored is not none and (stored.is_view or '_dim_loaded_at' not in (
            adapter.get_columns_in_relation(stored) | map(attribute='name') | list)) -%}
        {%- do log(model.name ~ ': ' ~ relation.identifier ~ ' has no row write times (_dim_loaded_at), '
                   ~ 'every entity recomputed', info=true) -%}
        {%- do run.update({'full': true}) -%}
    {%- endif -%}
    {%- if _gold_nothing_to_find(run) -%}
        {{ return('select ' ~ column ~ ' from ' ~ relation ~ ' where false') }}
    {%- endif -%}
    {{ return('select ' ~ column ~ ' from ' ~ relation ~ ' where _dim_loaded_at > ' ~ run['since']) }}
{% endmacro %}

{#- The rows of a gold table read by this model (`relation`, copy-on-write
    Iceberg) inserted, updated or deleted since this model's last build, old
    and new images (`_change_type`): Iceberg's changelog between the
    snapshot gold_mark recorded and the current one, `identifier_columns`
    pairing the images of a row. Nothing when the snapshot is the same; the
    run recomputes everything when no snapshot was recorded, or it is no
    longer an ancestor of the current one (the input was rebuilt, or the
    snapshot expired). -#}
{% macro gold_changed_rows(run, relation, identifier_columns) %}
    {%- set nothing = 'select *, cast(null as string) as _change_type from ' ~ relation ~ ' where false' -%}
    {%- if _gold_nothing_to_find(run) -%}
        {{ return(nothing) }}
    {%- endif -%}
    {%- set start = run['marks'].get(_gold_snapshot_mark(relation.identifier)) -%}
    {%- set state = none -%}
    {%- if start -%}
        {%- set state -%}
            select
                max_by(h.snapshot_id, h.made_current_at) as current_snapshot,
                count_if(h.snapshot_id = {{ start }}) as start_found,
                coalesce(max_by(cast(s.summary['total-delete-files'] as bigint), h.made_current_at), 0)
                    as delete_files
            from {{ relation }}.history as h
            left join {{ relation }}.snapshots as s on s.snapshot_id = h.snapshot_id
            where h.is_current_ancestor
        {%- endset -%}
        {%- set state = run_query(state).rows[0] -%}
    {%- endif -%}
    {%- if state is none or state[1] == 0 or state[2] > 0 -%}
        {%- do log(model.name ~ ': ' ~ relation.identifier ~ (' has delete files (a changelog needs copy-on-write)'
                   if state is not none and state[2] > 0 else ' was rebuilt or its snapshot read last expired')
                   ~ ', every entity recomputed', info=true) -%}
        {%- do run.update({'full': true}) -%}
        {{ return(nothing) }}
    {%- endif -%}
    {%- if state[0] | string == start | string -%}
        {{ return(nothing) }}
    {%- endif -%}
    {%- set view = this.identifier ~ '__' ~ relation.identifier ~ '__changes' -%}
    {%- do run_query("call spark_catalog.system.create_changelog_view(table => "
                     ~ sql_string(relation.schema ~ '.' ~ relation.identifier) ~ ", changelog_view => "
                     ~ sql_string(view) ~ ", options => map('start-snapshot-id', '" ~ start
                     ~ "', 'end-snapshot-id', '" ~ state[0] ~ "'), identifier_columns => array("
                     ~ _bronze_sql_list(identifier_columns) ~ "))") -%}
    {{ return('select * from ' ~ view) }}
{% endmacro %}

{#- The filter of the model's main input: `true` on a full recompute, else
    `column` among the changed keys (a NULL key too). On an incremental run
    it also writes the entities to replace (the changed keys; on a full
    recompute every entity the table holds) where replace_by_key finds them
    (`<model>__changed`), so an entity that produces no row any more is
    deleted. -#}
{% macro gold_changed_only(run, column, changed) %}
    {%- if not (execute and is_incremental() and flags.WHICH in ('run', 'build')) -%}
        {{ return('true') }}
    {%- endif -%}
    {%- if run['unchanged'] -%}
        {#- the model's SQL then carries the marker: replace_by_key commits
            nothing, gold_mark keeps the marks (no statement for either) -#}
        {{ return('false ' ~ replace_by_key_nothing_recomputed()) }}
    {%- endif -%}
    {%- set query = 'select ' ~ column ~ ' from ' ~ this if run['full']
                    else 'select distinct ' ~ column ~ ' from (\n' ~ changed ~ '\n) as changed' -%}
    {%- set keys = _cdc_scratch_write(this.schema, this.identifier ~ '__changed', query) -%}
    {%- if run['full'] -%}
        {{ return('true') }}
    {%- endif -%}
    {#- null-safe (an order without a customer is a group too, `in` never
        matches NULL); the key renamed so that `column` is the outer row's -#}
    {{ return('exists (select 1 from (select ' ~ column ~ ' as _gold_key from ' ~ keys
              ~ ') where _gold_key <=> ' ~ column ~ ')') }}
{% endmacro %}

{#- Post-hook of gold models: an incremental one records when it read its
    inputs (now: every input was written before this model started, and
    none is written while it runs), the current snapshot of each input
    table, and its reference tables' hash; after a run whose inputs had not
    changed (gold_changed_only put replace_by_key_nothing_recomputed's
    marker in the model's SQL) the marks stay. -#}
{% macro gold_mark() %}
    {%- if execute and config.get('materialized') == 'incremental' and flags.WHICH in ('run', 'build') -%}
        {%- if replace_by_key_nothing_recomputed() in (model.compiled_code or '') -%}
            {#- no input changed since the marks were set: they still hold -#}
            {{ return('') }}
        {%- endif -%}
        {%- set marks = ["'lakehouse.gold.read_at' = '" ~ run_query('select unix_micros(current_timestamp())').rows[0][0] ~ "'",
                         "'lakehouse.gold.references' = '" ~ _gold_references_hash() ~ "'"] -%}
        {%- for name, snapshot in _gold_input_snapshots().items() if snapshot is not none -%}
            {%- do marks.append("'" ~ _gold_snapshot_mark(name) ~ "' = '" ~ snapshot ~ "'") -%}
        {%- endfor -%}
        {%- do run_query('alter table ' ~ this ~ ' set tblproperties (' ~ marks | join(', ') ~ ')') -%}
    {%- endif -%}
{% endmacro %}

{#- Whether every input of the model is a table or incremental model (its
    snapshot tells whether it changed) or a reference table (meta
    gold_references, hashed): only then can "no input changed" be known
    without reading them. -#}
{% macro _gold_inputs_covered() %}
    {%- set references = (config.get('meta') or {}).get('gold_references', []) -%}
    {%- for id in model.depends_on.nodes -%}
        {%- set node = graph.nodes.get(id) -%}
        {%- if node is none or not ((node.resource_type == 'model' and node.config.materialized in ('table', 'incremental'))
                                    or (node.resource_type == 'seed' and node.name in references)) -%}
            {{ return(false) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(true) }}
{% endmacro %}

{#- The current snapshot of each table the model reads (its parents that
    are table or incremental models), by table name (none: no snapshot
    yet, or not an Iceberg table; current_snapshot_id). -#}
{% macro _gold_input_snapshots() %}
    {%- set snapshots = {} -%}
    {%- for id in model.depends_on.nodes if id in graph.nodes -%}
        {%- set node = graph.nodes[id] -%}
        {%- set relation = adapter.get_relation(node.database, node.schema, node.alias)
            if node.resource_type == 'model' and node.config.materialized in ('table', 'incremental') else none -%}
        {%- if relation is not none -%}
            {%- do snapshots.update({relation.identifier: current_snapshot_id(table_properties(relation))}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(snapshots) }}
{% endmacro %}

{#- The mark (table property) holding the snapshot of the input
    `identifier` a build read. Keyed by a digest of the name: Spark hides
    the value of a property whose key or value matches its redaction
    patterns (`spark.sql.redaction.options.regex`, `spark.redaction.regex`:
    url, secret, password, token, access key), so the mark of an input named
    e.g. fct_url_visits read back as '*********(redacted)'. -#}
{% macro _gold_snapshot_mark(identifier) %}
    {{ return('lakehouse.gold.snapshot.' ~ local_md5(identifier | lower)) }}
{% endmacro %}

{#- One hash of the rows of the model's reference tables (meta
    gold_references: names of seeds or other small tables). -#}
{%- macro _gold_references_hash() -%}
    {%- set names = (config.get('meta') or {}).get('gold_references', []) -%}
    {%- if not names -%}
        {{ return('none') }}
    {%- endif -%}
    {%- set query -%}
        select md5(concat_ws('|', {% for name in names -%}
            (select concat_ws(',', sort_array(collect_list(to_json(struct(*))))) from {{ ref(name) }})
            {{- ', ' if not loop.last }}{% endfor %}))
    {%- endset -%}
    {{ return(run_query(query).rows[0][0]) }}
{%- endmacro -%}

{#- Pre-hook of gold models: on --full-refresh dbt-spark drops an
    incremental Iceberg table before it creates it again, and checks the
    contract only when creating it. Checked here first, so that a model
    whose columns drift fails before anything is dropped. -#}
{% macro gold_contract_check() %}
    {%- if execute and config.get('materialized') == 'incremental' and should_full_refresh()
          and config.get('contract').enforced -%}
        {%- do get_assert_columns_equivalent(model.compiled_code) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
