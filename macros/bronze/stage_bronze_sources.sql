{#
    Create or refresh the external tables behind the bronze sources that have
    `meta.external`: at the start of every dbt invocation (on-run-start),
    those the selected models and tests read; on demand, every one (`dbt
    run-operation stage_bronze_sources`, or `--args '{select: [names]}'`).

    Per source table `<name>` in schema `<schema>` it creates, over every file
    under the table's location (recursively, so DMS date folders work too):
      <schema>.<name>__files  the file listing (path, landing time, size);
                              no file content is read through it
      <schema>.<name>__lines  CSV and Debezium JSON lines: the files' lines
                              as raw text, parsed by bronze_select() (never
                              by Spark's CSV or JSON reader, which lose rows
                              or their text on malformed input); Parquet
                              files are read one by one, on their own schema
      <schema>.<name>         a view: the rows of the data files, normalised
                              by bronze_select()
    (A CDC run adds `<name>__new_lines__<model>`, the lines of just the files
    new to that model: _cdc_new_files.) As a hook it then lists the files of
    every selected model that reads these tables, once for the run
    (_cdc_list_run_files), in one scan of all their folders where their
    paths allow it (the table `cdc_run_landing`, _cdc_landing_scan).
    The tables are external (dropping them never touches the files). Each
    carries the MD5 of the DDL that made it (table property `lakehouse.ddl`):
    a table whose DDL is unchanged is only refreshed (its file listing read
    again), one whose DDL changed (a column added to the YAML, a new
    location) is dropped and created again. So a file landed since the last
    run is seen without restarting Spark, and an unchanged source costs one
    statement per table. (On the embedded catalog the stamps are read from
    it once per schema and Spark application, then from the application's
    record: _bronze_recorded_stamps.) In a `dbt run`/`build` the hook
    refreshes a CSV or Debezium source's tables only when its files differ
    from those it saw when this Spark application last refreshed them
    (_bronze_refresh_changed). Spark never lists hidden files (names
    starting with `_` or `.`, e.g. `_SUCCESS`, `.crc`).
#}
{% macro stage_bronze_sources(select=none) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set needed = _bronze_sources_selected() if select is none else none -%}
    {%- set staged = [] -%}
    {%- set stamps = {} -%}
    {%- set recorded = _bronze_recorded_stamps() -%}
    {#- the hook of a run or build: the refresh of unchanged tables waits for
        the run's listing, which tells whose files changed -#}
    {%- set deferred = {} if select is none and flags.WHICH in ('run', 'build') else none -%}
    {%- for node in graph.sources.values() -%}
        {%- if bronze_is_external(node) -%}
            {%- if (select is none and (needed is none or node.unique_id in needed))
                  or (select is not none and (node.name in select or node.source_name in select)) -%}
                {#- (by schema in lower case, as the catalog compares them) -#}
                {%- if node.schema | lower not in stamps -%}
                    {%- do run_query('create database if not exists ' ~ node.schema) -%}
                    {%- do stamps.update({node.schema | lower: _bronze_ddl_stamps(node.schema, recorded)}) -%}
                {%- endif -%}
                {%- do _stage_bronze_table(node, stamps[node.schema | lower], deferred) -%}
                {%- do staged.append(node.unique_id) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do log('bronze: staged ' ~ staged | length ~ ' external source table(s)', info=true) -%}
    {%- if select is none -%}
        {#- the hook: the files of every selected CDC model, listed once (_cdc_new_files) -#}
        {%- do _cdc_list_run_files(staged, stamps, deferred) -%}
    {%- endif -%}
    {#- whatever the listing did not settle -#}
    {%- do _bronze_refresh(deferred or {}) -%}
    {%- do _bronze_record_stamps(recorded, stamps) -%}
    {{ return('') }}
{% endmacro %}

{#- The sources the invocation's selected nodes read (their own direct
    dependencies: only CDC models and source tests read bronze; a unit test
    takes its input columns from its model's sources); none, for
    every source, when the command selects no nodes (run-operation: dbt
    keeps `selected_resources` in a process-wide variable, so there it may
    still hold an earlier in-process command's selection). -#}
{% macro _bronze_sources_selected() %}
    {%- if flags.WHICH not in ('run', 'build', 'test', 'seed', 'snapshot')
          or selected_resources is not defined or not selected_resources -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set needed = [] -%}
    {%- for unique_id in selected_resources -%}
        {#- unit_test.<package>.<model>.<test>: the model's sources -#}
        {%- set parts = unique_id.split('.') -%}
        {%- set node_id = 'model.' ~ parts[1] ~ '.' ~ parts[2] if unique_id.startswith('unit_test.') else unique_id -%}
        {%- if unique_id.startswith('source.') -%}
            {%- do needed.append(unique_id) -%}
        {%- elif node_id in graph.nodes -%}
            {%- for parent in graph.nodes[node_id].depends_on.nodes if parent.startswith('source.') -%}
                {%- do needed.append(parent) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(needed) }}
{% endmacro %}

{#- table name (lower case) -> the `lakehouse.ddl` stamp of each table and
    view in the schema: read from the catalog (one statement for the whole
    schema, which reads every table's metadata: 1.9-2.2 s for the 800
    tables of 200 sources, 2026-12-05), or from `recorded`
    (_bronze_recorded_stamps) for a schema this Spark application staged
    before, kept for the tables still there (`show tables`: names only,
    0.1 s). -#}
{% macro _bronze_ddl_stamps(schema, recorded=none) %}
    {%- set stamps = {} -%}
    {%- if recorded is not none and schema | lower in recorded -%}
        {%- set present = [] -%}
        {%- for row in run_query('show tables in ' ~ schema) if not row['isTemporary'] -%}
            {%- do present.append(row['tableName'] | lower) -%}
        {%- endfor -%}
        {%- for table, stamp in recorded[schema | lower].items() if table in present -%}
            {%- do stamps.update({table: stamp}) -%}
        {%- endfor -%}
        {{ return(stamps) }}
    {%- endif -%}
    {%- for row in run_query("show table extended in " ~ schema ~ " like '*'") -%}
        {%- set found = modules.re.search('lakehouse[.]ddl=([0-9a-f]{32})', row['information']) -%}
        {%- if found and not row['isTemporary'] -%}
            {%- do stamps.update({row['tableName'] | lower: found.group(1)}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(stamps) }}
{% endmacro %}

{#- `deferred` (none: refresh now): source unique_id -> {'tables': a CSV or
    Debezium source's tables, whose refresh waits for _bronze_refresh,
    'created': one of them was created anew (and so refreshed now too: the
    view below reads it)}. Parquet is refreshed now: its view names the
    files, read from `__files`. -#}
{% macro _stage_bronze_table(node, stamps, deferred=none) %}
    {%- set cfg = bronze_external_config(node) -%}
    {%- set base = node.schema ~ '.' ~ (node.identifier or node.name) -%}
    {%- set recursive = {'path': cfg['location'], 'recursiveFileLookup': 'true'} -%}
    {%- set later = deferred is not none and cfg['format'] in ('csv', 'debezium') -%}
    {%- set tables = {base ~ '__files': _bronze_external_table(base ~ '__files', none, 'binaryFile', recursive,
                                                               stamps, refresh=not later)} -%}
    {%- if cfg['format'] in ('csv', 'debezium') -%}
        {#- lines split on \n only: a \r (CRLF, or inside a quoted value) stays data -#}
        {%- do tables.update({base ~ '__lines': _bronze_external_table(base ~ '__lines', ['value'], 'text',
                                                                       dict(recursive, lineSep='\n'), stamps,
                                                                       refresh=not later)}) -%}
    {%- endif -%}
    {%- if later -%}
        {%- do deferred.update({node.unique_id: {'tables': tables.keys() | list,
                                                 'created': true in tables.values() | list}}) -%}
    {%- endif -%}
    {#- Parquet: each file is read on its own schema (see bronze_select), so
        its view names the files and changes when one lands -#}
    {%- set query = bronze_select(node) -%}
    {%- set stamp = local_md5(query) -%}
    {%- if stamps.get(base.split('.')[-1] | lower) != stamp -%}
        {%- do _bronze_check_view_length(node, query) -%}
        {%- do stamps.update({base.split('.')[-1] | lower: stamp}) -%}
        {#- drop + create rather than `create or replace`: the latter's existence
            check through the Iceberg session catalog once raced into
            "AlreadyExistsException" on a fresh metastore -#}
        {%- do run_query('drop view if exists ' ~ base) -%}
        {%- do run_query('create view ' ~ base ~ " tblproperties ('lakehouse.ddl' = '" ~ stamp ~ "') as "
                         ~ query) -%}
    {%- endif -%}
{% endmacro %}

{#- The embedded catalog (Hive metastore on Derby) stores a view's SQL in at
    most 32,700 characters and fails with a truncation error beyond: say
    which source and what to change instead. About 80 CSV or 340 Debezium
    columns of 15-character names fit (measured 2026-11-26); a Debezium
    decimal column under decimal_handling: precise takes about 950
    characters (_bronze_precise_decimal_text, 2026-12-07). -#}
{% macro _bronze_check_view_length(node, query) %}
    {%- if query | length <= 32700 -%}{{ return(none) }}{%- endif -%}
    {%- if _bronze_catalog_is_embedded() -%}
        {%- do exceptions.raise_compiler_error("bronze " ~ node.source_name ~ "." ~ node.name ~ ": its view's SQL is "
            ~ query | length ~ " characters for its " ~ bronze_file_columns(node) | length ~ " columns, more than "
            ~ "the 32,700 characters the embedded catalog (Hive metastore on Derby) keeps for a view. Its view was "
            ~ "not made. Declare fewer columns (or shorter names) in its YAML, or run the project on the "
            ~ "PostgreSQL catalog (`lakehouse cluster up`, target `cluster`).") -%}
    {%- endif -%}
{% endmacro %}

{#- Whether the catalog is the embedded one (Hive metastore on Derby),
    which only this process can open (_bronze_catalog) -#}
{% macro _bronze_catalog_is_embedded() %}
    {{ return(_bronze_catalog()['embedded']) }}
{% endmacro %}

{#- The session's catalog, from its settings (one statement): {'derby':
    the metastore's Derby driver classes are shared with Spark, as the
    embedded profile sets (the connection URL itself reads back redacted),
    'server': a metastore server is named (hive.metastore.uris, through
    Spark's spark.hadoop. or spark.hive. prefix), which Spark uses instead,
    shared with other processes; 'embedded': Derby and no server}. The
    session's time zone is checked on the way (_bronze_require_utc). -#}
{% macro _bronze_catalog() %}
    {%- set settings = {} -%}
    {%- for row in run_query('set').rows -%}{%- do settings.update({row[0]: row[1]}) -%}{%- endfor -%}
    {%- do _bronze_require_utc(settings.get('spark.sql.session.timeZone')) -%}
    {%- set uris = [settings.get('spark.hadoop.hive.metastore.uris'), settings.get('spark.hive.metastore.uris')] -%}
    {#- (agate reads an empty value as none) -#}
    {%- set derby = 'org.apache.derby' in (settings.get('spark.sql.hive.metastore.sharedPrefixes') or '') -%}
    {%- set server = uris | select | map('trim') | select | list | length > 0 -%}
    {{ return({'derby': derby, 'server': server, 'embedded': derby and not server}) }}
{% endmacro %}

{#- Fail unless the session's time zone is UTC (`zone`: as `set` lists it,
    none when the session never set it and Spark's default, the JVM's zone,
    applies). Bronze hands times to silver as text and silver casts them in
    the session's zone: in a zone with daylight saving, a time in the hour
    the clocks skip comes out an hour later and one in the hour they repeat
    may take the other offset, a silent change. The profiles set UTC; a
    cluster's spark-defaults must too. Checked by every staging (the
    on-run-start hook) and, before the build lock is taken, by
    lakehouse_lock_acquire (a refusal after it would leave the lock held). -#}
{% macro _bronze_require_utc(zone) %}
    {%- if zone is none -%}
        {%- set zone = run_query('set spark.sql.session.timeZone').rows[0][1] -%}
    {%- endif -%}
    {%- if zone not in ('UTC', 'Etc/UTC', 'UCT', 'Etc/UCT', 'Zulu', 'Etc/Zulu', 'Universal',
                        'Etc/Universal', 'Z', 'GMT', 'Etc/GMT', 'GMT0', 'Etc/GMT0', 'Greenwich',
                        'Etc/Greenwich', '+00', '+00:00', '-00:00', '+00:00:00', 'UTC+0', 'UTC+00:00',
                        'GMT+0', 'GMT+00:00') -%}
        {%- do exceptions.raise_compiler_error("spark.sql.session.timeZone is '" ~ zone ~ "'; set it to "
            ~ "UTC (the Spark Thrift server's spark-defaults, or a session profile's server_side_parameters). Times go "
            ~ "from bronze to silver as text, cast in the session's zone: in a zone with daylight "
            ~ "saving a time in the hour the clocks skip or repeat would change by an hour. "
            ~ "Nothing was staged or applied.") -%}
    {%- endif -%}
{% endmacro %}

{#- The `lakehouse.ddl` stamps of the bronze tables and views this Spark
    application staged (schema in lower case -> table -> stamp, as
    _bronze_ddl_stamps returns them), from a global temporary view it keeps
    (it lives exactly as long as the application); {} before its first
    staging. The view is dropped as it is read and written again when the
    staging ends (_bronze_record_stamps): a staging that fails after
    making a table anew leaves no record that would outlive the table's
    stamp. Only on the embedded catalog, where no other process can drop or
    create a table between two runs; elsewhere (a shared catalog) none, and
    where Derby is configured but a metastore server is named, any record is
    dropped: every staging reads the stamps from the catalog. A table dropped by
    other means in this application is missed by name (_bronze_ddl_stamps). -#}
{% macro _bronze_recorded_stamps() %}
    {%- set catalog = _bronze_catalog() -%}
    {%- if not catalog['embedded'] -%}
        {#- a record an embedded staging left (this session named a server
            since) would miss what this one makes; an application without
            Derby never has one -#}
        {%- if catalog['derby'] -%}
            {%- do run_query('drop view if exists global_temp.cdc_bronze_stamps') -%}
        {%- endif -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set recorded = {} -%}
    {%- if run_query("show views in global_temp like 'cdc_bronze_stamps'").rows | length > 0 -%}
        {%- for row in run_query('select schema_name, table_name, stamp from global_temp.cdc_bronze_stamps') -%}
            {%- do recorded.setdefault(row[0], {}).update({row[1]: row[2]}) -%}
        {%- endfor -%}
        {%- do run_query('drop view if exists global_temp.cdc_bronze_stamps') -%}
    {%- endif -%}
    {{ return(recorded) }}
{% endmacro %}

{#- Write the record `recorded` was read from (none: no record kept) again,
    with `stamps` (the schemas staged now, with the tables made since they
    were read) in it -#}
{% macro _bronze_record_stamps(recorded, stamps) %}
    {%- if recorded is none -%}{{ return(none) }}{%- endif -%}
    {%- set record = dict(recorded) -%}
    {%- do record.update(stamps) -%}
    {%- set rows = [] -%}
    {%- for schema, tables in record.items() -%}
        {%- for table, stamp in tables.items() -%}
            {%- do rows.append('(' ~ sql_string(schema) ~ ', ' ~ sql_string(table) ~ ', ' ~ sql_string(stamp) ~ ')') -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- if rows -%}
        {%- do run_query('create or replace global temporary view cdc_bronze_stamps as select * from values '
                         ~ rows | join(', ') ~ ' as stamps(schema_name, table_name, stamp)') -%}
    {%- endif -%}
{% endmacro %}

{#- One external table over files; columns are all strings (none: the
    format's own schema). Dropped and created again when its DDL differs
    from the one stamped on it (`stamps`; none: always), then refreshed
    (`refresh` false: only a table created anew). Returns whether it was
    created anew. -#}
{% macro _bronze_external_table(table, columns, using, options, stamps=none, refresh=true) %}
    {%- set ddl -%}
        create table {{ table }}
        {%- if columns %} (
            {%- for column in columns %}
            `{{ column }}` string{{ ',' if not loop.last }}
            {%- endfor %}
        )
        {%- endif %}
        using {{ using }}
        options (
            {%- for key, value in options.items() %}
            {{ sql_string(key) }} {{ sql_string(value) }}{{ ',' if not loop.last }}
            {%- endfor %}
        )
    {%- endset -%}
    {%- set stamp = local_md5(ddl) -%}
    {%- set created = stamps is none or stamps.get(table.split('.')[-1] | lower) != stamp -%}
    {%- if created -%}
        {%- do run_query('drop table if exists ' ~ table) -%}
        {%- do run_query(ddl ~ "\n        tblproperties ('lakehouse.ddl' = '" ~ stamp ~ "')") -%}
        {%- if stamps is not none -%}{%- do stamps.update({table.split('.')[-1] | lower: stamp}) -%}{%- endif -%}
    {%- endif -%}
    {#- an unchanged table's file listing is cached (and a dropped table's
        can outlive it in Spark's relation cache, which the Iceberg session
        catalog does not invalidate): refresh -#}
    {%- if refresh or created -%}
        {%- do run_query('refresh table ' ~ table) -%}
    {%- endif -%}
    {{ return(created) }}
{% endmacro %}

{#- Refresh the deferred tables (_stage_bronze_table) of every source not in
    `keep`, and forget them all. -#}
{% macro _bronze_refresh(deferred, keep=[]) %}
    {%- for source_id, staged in deferred.items() if source_id not in keep -%}
        {%- for table in staged['tables'] -%}
            {%- do run_query('refresh table ' ~ table) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- do deferred.clear() -%}
{% endmacro %}

{#- After the run's one-scan listing (_cdc_list_run_files): refresh the
    deferred tables of the sources whose files (`files`: source unique_id ->
    digest of paths, times and sizes) differ from those recorded when this
    Spark application last refreshed them. Spark caches a table's file
    listing from its first read after a refresh; a source whose files are
    the ones recorded then has nothing newer to see (at 200 sources with 5
    changed, the refreshes of the other 195 were 2 x 0.03 s each). A new
    Spark application has no record: it refreshes every source once; so
    does a run that created a source's table (its view was made from a
    listing older than the scan). The record, a global temporary view (it
    lives exactly as long as the application's caches), is then updated
    for the `staged` sources: a deferred source with files keeps their
    digest, any other (Parquet, no file) is forgotten. -#}
{% macro _bronze_refresh_changed(staged, deferred, files) %}
    {%- set name = 'cdc_bronze_listings' -%}
    {%- set record = {} -%}
    {%- if run_query("show views in global_temp like '" ~ name ~ "'").rows | length > 0 -%}
        {%- for row in run_query('select source_table, files from global_temp.' ~ name) -%}
            {%- do record.update({row[0]: row[1]}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set before = dict(record) -%}
    {%- set keep = [] -%}
    {%- for source_id in staged -%}
        {%- set node = graph.sources[source_id] -%}
        {%- set base = node.schema ~ '.' ~ (node.identifier or node.name) -%}
        {%- if source_id in deferred and source_id in files -%}
            {%- if record.get(base) == files[source_id] and not deferred[source_id]['created'] -%}
                {%- do keep.append(source_id) -%}
            {%- endif -%}
            {%- do record.update({base: files[source_id]}) -%}
        {%- elif base in record -%}
            {%- do record.pop(base) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do _bronze_refresh(deferred, keep) -%}
    {%- if record != before -%}
        {%- set rows = [] -%}
        {%- for base, digest in record.items() -%}
            {%- do rows.append('(' ~ sql_string(base) ~ ', ' ~ sql_string(digest) ~ ')') -%}
        {%- endfor -%}
        {%- do run_query('create or replace global temporary view ' ~ name ~ ' as '
                         ~ ('select * from values ' ~ rows | join(', ') ~ ' as listed(source_table, files)' if rows
                            else 'select cast(null as string) as source_table, cast(null as string) as files where false')) -%}
    {%- endif -%}
{% endmacro %}
