{#-
    What a data test's pass depends on, as one digest, or none when its pass
    must not be reused (then it always runs):
    - its query (`test_sql`: the compiled SQL, its header, the failure
      settings and the severity), so a changed test, macro or var runs
      again;
    - for each table it reads, the table's current Iceberg snapshot and its
      columns (`_test_table_state`): any write, and any column added,
      dropped, renamed or retyped, runs it again.
    None when the test reads a source or a view (their content is not one
    table's snapshot), stores its failures, reads nothing through ref, calls
    a function whose value changes by itself (`_calls_changing_function`), has
    `meta: {reuse_pass: false}` (a test that reads a table by its name, not
    through ref, whose changes the key cannot see), or when the var
    `reuse_test_passes` is false.
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

{#- The state of a test's parent as text (relation, current snapshot id,
    digest of its columns), or none when it is not an Iceberg table holding
    a snapshot. The relation is the one the test reads: `ref` resolves it as
    in the test's SQL (with `--defer`, another schema's). Read for each test,
    right before it runs, by `describe table extended` (no Spark job): a
    state kept from an earlier test could miss a write made since, by
    another node or another process. -#}
{% macro _test_table_state(node) %}
    {%- if node.resource_type not in ('model', 'seed', 'snapshot')
           or node.config.materialized not in ('table', 'incremental', 'seed', 'snapshot')
           or node.config.file_format != 'iceberg' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set version = node.get('version') -%}
    {%- set read = ref(node.package_name, node.name, v=(version | string) if version is not none else none) -%}
    {%- set relation = adapter.get_relation(database=read.database, schema=read.schema, identifier=read.identifier) -%}
    {#- (dbt's cache holds a relation made in this invocation without its
        type: the describe says whether it is an Iceberg table) -#}
    {%- if relation is none or relation.type == 'view' -%}{{ return(none) }}{%- endif -%}
    {%- set columns = [] -%}
    {%- set found = {'in_columns': true, 'type': none, 'provider': none, 'snapshot': none} -%}
    {%- for row in run_query('describe table extended ' ~ relation) -%}
        {%- set name = row[0] or '' -%}
        {%- if name == '' or name.startswith('#') -%}
            {%- do found.update({'in_columns': false}) -%}
        {%- elif found['in_columns'] -%}
            {%- do columns.append(name ~ ' ' ~ row[1]) -%}
        {%- elif name == 'Provider' -%}
            {%- do found.update({'provider': row[1]}) -%}
        {%- elif name == 'Type' -%}
            {%- do found.update({'type': (row[1] or '') | upper}) -%}
        {%- elif name == 'Table Properties' -%}
            {%- set snapshot = modules.re.search('current-snapshot-id=(-?[0-9]+)', row[1] or '') -%}
            {%- do found.update({'snapshot': snapshot.group(1) if snapshot else none}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if found['provider'] != 'iceberg' or found['type'] == 'VIEW' or found['snapshot'] is none -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(relation ~ '@' ~ found['snapshot'] ~ '#' ~ local_md5(columns | join(','))) }}
{% endmacro %}
