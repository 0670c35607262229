{#-
    What a data test's pass depends on, as one digest, or none when its pass
    must not be reused (then it always runs):
    - its query (`test_sql`: the compiled SQL, its header, the failure
      settings and the severity), so a changed test, macro or var runs
      again;
    - for each table it reads, the table's current Iceberg snapshot and its
      columns (`_test_table_state`): any write, and any column added,
      dropped, renamed or retyped, runs it again;
    - for each view it reads, the view's text and columns, the engine, and
      the state of each relation the view reads (`_test_view_state`).
    None when the test reads a source or a view whose content is not a
    function of Iceberg snapshots (`_test_view_state`), stores its failures,
    reads nothing through ref, calls a function whose value changes by
    itself (`_calls_changing_function`), has `meta: {reuse_pass: false}` (a
    test that reads a table by its name, not through ref, whose changes the
    key cannot see; on a view model, every test of the view and of the
    views that read it: `_reuse_pass_refused`), or when the
    var `reuse_test_passes` is false.
-#}
{% macro _test_pass_key(test_sql) %}
    {%- set parents = model.depends_on.nodes -%}
    {%- if not var('reuse_test_passes', true) or (model.config.meta or {}).get('reuse_pass', true) == false
           or should_store_failures() or model.sources or not parents
           or _calls_changing_function(test_sql) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set states = [] -%}
    {%- for uid in parents -%}
        {%- set node = graph.nodes.get(uid) -%}
        {%- set table = _test_table_state(node) if node is not none else none -%}
        {%- if table is none -%}{{ return(none) }}{%- endif -%}
        {%- do states.append(table) -%}
    {%- endfor -%}
    {{ return(local_md5(test_sql ~ '|' ~ states | join('|'))) }}
{% endmacro %}

{#- The state of a test's parent as text, or none when its content is not
    a function of Iceberg snapshots: a model, seed or snapshot that is an
    Iceberg table or a view (`_test_relation_state`). The relation is the one
    the test reads: `ref` resolves it as in the test's SQL (with `--defer`,
    another schema's). -#}
{% macro _test_table_state(node) %}
    {%- if node.resource_type not in ('model', 'seed', 'snapshot')
           or node.config.materialized not in ('table', 'incremental', 'seed', 'snapshot', 'view')
           or (node.config.materialized != 'view' and node.config.file_format != 'iceberg')
           or (node.config.meta or {}).get('reuse_pass', true) == false -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set version = node.get('version') -%}
    {%- set read = ref(node.package_name, node.name, v=(version | string) if version is not none else none) -%}
    {{ return(_test_relation_state(read.database, read.schema, read.identifier, 0)) }}
{% endmacro %}

{#- The state of one relation as text: for an Iceberg table, its name, its
    current snapshot id and a digest of its columns; for a view, as
    `_test_view_state` says (`depth`: views read through views so far).
    None when it is neither, or holds no snapshot. Read for each test,
    right before it runs, by `describe table extended` (no Spark job): a
    state kept from an earlier test could miss a write made since, by
    another node or another process. -#}
{% macro _test_relation_state(database, schema, identifier, depth) %}
    {%- set relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
    {#- a relation a view reads need not be a dbt node (a model's kept
        changes), nor in dbt's listing when made later in this invocation
        (a temporary view of that name is not it: rejectattr isTemporary) -#}
    {%- if relation is none and depth > 0
           and run_query("show tables in " ~ schema ~ " like '" ~ identifier ~ "'").rows
                         | rejectattr(2) | list | length == 1 -%}
        {%- set relation = api.Relation.create(database=database, schema=schema, identifier=identifier) -%}
    {%- endif -%}
    {%- if relation is none -%}{{ return(none) }}{%- endif -%}
    {%- set found = _relation_description(relation) -%}
    {%- if found['type'] == 'VIEW' -%}
        {{ return(_test_view_state(relation, found['text'], found['columns'], depth)) }}
    {%- endif -%}
    {%- set snapshot = modules.re.search('current-snapshot-id=(-?[0-9]+)', found['properties'] or '') -%}
    {%- if found['provider'] != 'iceberg' or snapshot is none -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(relation ~ '@' ~ snapshot.group(1) ~ '#' ~ local_md5(found['columns'] | join(','))) }}
{% endmacro %}

{#- The state of a view (`text`: its SQL as the catalog holds it) as text:
    a digest of its text, its columns and the engine (Spark's version and
    the session's time zone, which a view's rows can depend on), then the
    state of each relation it reads. None (its tests run) unless the text
    is of a shape whose every read is seen here: each name after `from` or
    `join` is one of its common table expressions or a relation of the
    project's schemas (`<target schema>` or `<target schema>_...`, as the
    change logs read their model's kept changes), each an Iceberg table or
    such a view (up to three views deep). Refused, being unseen or changing
    by themselves: a subquery after `from` or `join`, a name followed by a
    comma (a comma join), `table`, time travel (`as of`), SQL comments, a
    sampled or file-dependent read, a function whose value changes by
    itself (`_calls_changing_function`). Not seen: a common table
    expression named as a table it reads inside its own definition. -#}
{% macro _test_view_state(relation, text, columns, depth) %}
    {%- set re = modules.re -%}
    {%- if depth >= 3 or not text or _calls_changing_function(text)
           or re.search('(?i)--|/[*]|\\btable\\b|\\bas\\s+of\\b|\\bfor\\s+system_|\\btablesample\\b|\\b(current_user|session_user|user|input_file_name|input_file_block_start|input_file_block_length|monotonically_increasing_id|spark_partition_id)\\s*\\(', text)
           or re.search('(?i)\\b(from|join)\\s*\\(', text)
           or re.search('(?i)\\b(from|join)\\s*[^\\s(),;]+(\\s+(as\\s+)?\\w+)?\\s*,', text) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set project_relation = '`?(' ~ re.escape(target.schema) ~ '(?:_\\w+)?)`?\\.`?(\\w+)`?' -%}
    {%- set ctes = re.findall('(?i)(?:\\bwith|,)\\s*(\\w+)\\s+as\\s*\\(', text) | map('lower') | list -%}
    {%- set reads = [] -%}
    {%- for name in re.findall('(?i)\\b(?:from|join)\\s*([^\\s(),;]+)', text) if name | lower not in ctes -%}
        {%- set read = re.fullmatch('(?i)' ~ project_relation, name) -%}
        {%- if read is none -%}{{ return(none) }}{%- endif -%}
        {%- do reads.append((read.group(1), read.group(2))) -%}
    {%- endfor -%}
    {%- set states = [] -%}
    {%- for read in reads | unique -%}
        {%- if _reuse_pass_refused(read[1]) -%}{{ return(none) }}{%- endif -%}
        {%- set state = _test_relation_state(relation.database, read[0], read[1], depth + 1) -%}
        {%- if state is none -%}{{ return(none) }}{%- endif -%}
        {%- do states.append(state) -%}
    {%- endfor -%}
    {%- set own = local_md5([text, columns | join(','), _test_engine()] | join('|')) -%}
    {{ return(relation ~ '=view#' ~ own ~ '(' ~ states | join(', ') ~ ')') }}
{% endmacro %}

{#- Whether a model, seed or snapshot named `identifier` (its alias, in any
    schema: one of that name elsewhere only makes the test run) has `meta:
    {reuse_pass: false}`: a view that reads it, however deep, gives its
    tests no key, as the node's own tests have none. -#}
{% macro _reuse_pass_refused(identifier) %}
    {%- for node in graph.nodes.values() if node.resource_type in ('model', 'seed', 'snapshot')
                                           and (node.alias or node.name) | lower == identifier | lower -%}
        {%- if (node.config.meta or {}).get('reuse_pass', true) == false -%}{{ return(true) }}{%- endif -%}
    {%- endfor -%}
    {{ return(false) }}
{% endmacro %}

{#- The engine a view's rows are computed on: Spark's version and the
    session's time zone, read once per invocation. -#}
{% macro _test_engine() %}
    {%- set state = _test_pass_state() -%}
    {%- if state['engine'] is none -%}
        {%- do state.update({'engine': run_query('select version(), current_timezone()').rows[0]
                                       | join(' ')}) -%}
    {%- endif -%}
    {{ return(state['engine']) }}
{% endmacro %}
