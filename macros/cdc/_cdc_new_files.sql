{#
    Step 1 of a CDC run: find the files to read. Lists every file under the
    source's location (no content is read) and keeps those this model has
    not logged yet, by path, modification time and size, so a file that
    lands late with an old modification time (a copy or a restore), or
    lands again with another time or size, is found like any other. The list is frozen
    for the run in `<model>__cdc_files` (data files: is_data; others are
    logged as ignored by cdc_apply), so what is logged is exactly what was
    listed.

    The listing of every model a `dbt run`/`build` selected is made once, at
    its start, in one query (_cdc_list_run_files, called by the
    on-run-start hook after staging), which leaves each model the files it
    needs as values in a view named after it: a model then reads them
    without a Spark job, and a model with nothing new finds no such view.
    A model run without that listing (hooks skipped), or one the hook did
    not foresee as a first run or full refresh, lists its source itself.

    Returns {'paths': the data files' paths, for bronze_select();
    'nothing_new': an incremental run found no file at all, not even a
    non-data one (cdc_changes marks its SQL so, and the run then does
    nothing: no view of the model, no `<model>__cdc_files`); 'bytes': the
    data files' size; 'ignored': how many listed files are not data files.
    cdc_changes writes the last two into the model's SQL for cdc_apply
    (_cdc_new_files_marker)}. Commands that
    only compile (compile, docs, lint templaters) list nothing: none.
#}
{% macro _cdc_new_files(node, incremental) %}
    {%- if flags.WHICH not in ('run', 'build') -%}{{ return(none) }}{%- endif -%}
    {%- set cfg = bronze_external_config(node) -%}
    {%- set files = this.identifier ~ '__cdc_files' -%}
    {%- set listing = _cdc_run_listing_state(model.name) -%}
    {#- files it read before that are gone (a DMS truncate): fail before
        anything, even when nothing new landed (_cdc_listing_sql) -#}
    {%- if incremental and listing['gone'] -%}
        {%- set gone = run_query('select files_gone, to_json(examples) from global_temp.'
                                 ~ _cdc_run_gone_name(model.name)).rows[0] -%}
        {%- do _cdc_files_gone_error(model.name, gone[0], fromjson(gone[1])) -%}
    {%- endif -%}
    {#- the hook listed this run's files, and for this model those it needs:
        the unlogged ones of an incremental run, every one of a first run
        or full refresh (a run the hook foresaw otherwise lists itself) -#}
    {%- if listing['exists'] and (incremental or listing['all']) -%}
        {#- nothing unlogged for this model in the run's listing: nothing to
            read (told by the statement above; no Spark job) -#}
        {%- if incremental and not listing['new'] and not listing['all'] -%}
            {{ return({'paths': [], 'nothing_new': true, 'bytes': 0, 'ignored': 0}) }}
        {%- endif -%}
        {#- the model's part of the listing: rows as values (reading them
            starts no Spark job) -#}
        {%- set query -%}
            select file_path, unix_micros(file_modified_at), file_size, is_data
            from global_temp.{{ _cdc_run_files_name(model.name, listing['all']) }}
            where source_id = {{ sql_string(node.unique_id) }}
                {%- if incremental %} and not logged{% endif %}
        {%- endset -%}
        {%- set rows = run_query(query).rows -%}
        {%- if incremental and rows | length == 0 -%}
            {{ return({'paths': [], 'nothing_new': true, 'bytes': 0, 'ignored': 0}) }}
        {%- endif -%}
        {%- set query -%}
            create or replace temporary view {{ files }} as
            {{ _cdc_listed_values(rows) }}
        {%- endset -%}
        {%- do run_query(query) -%}
        {%- set paths = [] -%}
        {%- set sizes = [] -%}
        {%- for row in rows if row[3] -%}{%- do paths.append(row[0]) -%}{%- do sizes.append(row[2] or 0) -%}{%- endfor -%}
    {%- else -%}
        {#- dropping a temporary view uncaches it too -#}
        {%- do run_query('drop view if exists ' ~ files) -%}
        {%- set query -%}
            cache table {{ files }} as
            select file_path, file_modified_at, file_size, is_data
            from ({{ _cdc_listing_sql([(model, node)], incremental, check=true, skip=[model.name]) }}) as listed
        {%- endset -%}
        {%- do run_query(query) -%}
        {%- set query -%}
            select files_gone, examples
            from (select {{ _cdc_gone_columns() }} from ({{ _cdc_listing_sql([(model, node)]) }}) as listed) as gone
            where files_gone > 0
        {%- endset -%}
        {%- set gone = run_query(query).rows if incremental and cfg['files_removed'] != 'ignore' else [] -%}
        {%- if gone -%}
            {%- do run_query('drop view if exists ' ~ files) -%}
            {%- do _cdc_files_gone_error(model.name, gone[0][0], fromjson(gone[0][1])) -%}
        {%- endif -%}
        {%- set rows = run_query('select file_path, is_data, file_size from ' ~ files).rows -%}
        {%- if incremental and rows | length == 0 -%}
            {%- do run_query('drop view if exists ' ~ files) -%}
            {{ return({'paths': [], 'nothing_new': true, 'bytes': 0, 'ignored': 0}) }}
        {%- endif -%}
        {%- set paths = [] -%}
        {%- set sizes = [] -%}
        {%- for row in rows if row[1] -%}{%- do paths.append(row[0]) -%}{%- do sizes.append(row[2] or 0) -%}{%- endfor -%}
    {%- endif -%}
    {%- if paths -%}
        {%- do _cdc_stage_new_lines(node, cfg, paths) -%}
    {%- endif -%}
    {%- do _cdc_count_skipped_events(node, cfg, paths) -%}
    {{ return({'paths': paths, 'nothing_new': false, 'bytes': sizes | sum, 'ignored': rows | length - paths | length}) }}
{% endmacro %}

{#- Listed files as a query over values, with the columns of a listing:
    file_path, file_modified_at, file_size, is_data; with `sourced`,
    source_id before them and logged after them. `rows`: lists of path,
    modification time in microseconds since the epoch, size and is_data
    (as values or as their text), with `sourced` each preceded by its
    source_id and followed by logged. -#}
{% macro _cdc_listed_values(rows, sourced=false) %}
    {%- set columns = ['file_path', 'file_modified_at', 'file_size', 'is_data'] -%}
    {%- set types = ['string', 'timestamp', 'bigint', 'boolean'] -%}
    {%- if sourced -%}
        {%- set columns = ['source_id'] + columns + ['logged'] -%}
        {%- set types = ['string'] + types + ['boolean'] -%}
    {%- endif -%}
    {%- set values = [] -%}
    {%- for row in rows -%}
        {%- set fields = row[1:5] if sourced else row -%}
        {%- set literals = [sql_string(fields[0]), 'timestamp_micros(' ~ fields[1] | int ~ 'L)',
                            fields[2] | int ~ 'L', 'true' if fields[3] in (true, 'true') else 'false'] -%}
        {%- if sourced -%}
            {%- set literals = [sql_string(row[0])] + literals + ['true' if row[5] in (true, 'true') else 'false'] -%}
        {%- endif -%}
        {%- do values.append('(' ~ literals | join(', ') ~ ')') -%}
    {%- endfor -%}
    {%- if values -%}
        {{ return('select * from values ' ~ values | join(', ') ~ ' as listed(' ~ columns | join(', ') ~ ')') }}
    {%- endif -%}
    {%- set nulls = [] -%}
    {%- for column in columns -%}
        {%- do nulls.append('cast(null as ' ~ types[loop.index0] ~ ') as ' ~ column) -%}
    {%- endfor -%}
    {{ return('select ' ~ nulls | join(', ') ~ ' where false') }}
{% endmacro %}

{#- The run's listing is kept in global temporary views, so every session
    of the Spark application sees it (on the cluster target each dbt thread
    is a Thrift session of its own), named after the invocation, so a later
    dbt command never reads an earlier one's: the names of the models whose
    files were listed (it exists when the hook listed), and for each model
    that needs files a view of them over values (_cdc_run_files_name), so
    that a model finds out what it has to read in the one statement that
    looks for the listing (`show views`), and reads its files without a
    Spark job. `global_temp` is Spark's default spark.sql.globalTempDatabase
    (a static setting). -#}
{% macro _cdc_run_models_name() %}
    {{ return('cdc_run_models_' ~ invocation_id | replace('-', '_')) }}
{% endmacro %}

{#- The view of `model_name`'s files in the run's listing (source_id,
    file_path, file_modified_at, file_size, is_data, logged): its unlogged
    files (`all` false), or all of them, for a first run or a full
    refresh -#}
{% macro _cdc_run_files_name(model_name, all=false) %}
    {{ return(_cdc_run_files_prefix() ~ ('all_' if all else 'new_') ~ local_md5(model_name)[:16]) }}
{% endmacro %}

{#- The view of `model_name`'s files gone since it read them
    (files_gone, examples: _cdc_gone_columns), made only when there are any -#}
{% macro _cdc_run_gone_name(model_name) %}
    {{ return(_cdc_run_files_prefix() ~ 'gone_' ~ local_md5(model_name)[:16]) }}
{% endmacro %}

{% macro _cdc_run_files_prefix() %}
    {{ return('cdc_run_files_' ~ invocation_id | replace('-', '_') ~ '_') }}
{% endmacro %}

{#- Whether the hook listed this run's files, and whether it left a view
    of `model_name`'s unlogged files (`new`) or of all of them (`all`),
    and whether files it read before are gone (`gone`, _cdc_run_gone_name),
    in one statement: {'exists', 'new', 'all', 'gone'} -#}
{% macro _cdc_run_listing_state(model_name=none) %}
    {%- set names = [_cdc_run_models_name()]
                    + ([_cdc_run_files_name(model_name), _cdc_run_files_name(model_name, true),
                        _cdc_run_gone_name(model_name)] if model_name else []) -%}
    {%- set views = run_query('show views in global_temp like ' ~ sql_string(names | join('|'))).columns[1].values()
                    | map('lower') | list -%}
    {{ return({'exists': names[0] | lower in views,
               'new': model_name is not none and names[1] | lower in views,
               'all': model_name is not none and names[2] | lower in views,
               'gone': model_name is not none and names[3] | lower in views}) }}
{% endmacro %}

{#- The files under the sources of (model, source node) pairs, one row per
    pair and file: model_name, source_id, file_path, file_modified_at,
    file_size, is_data (the source's file_pattern), logged (_cdc_logged;
    only such rows are left out when `unlogged_only`) and gone false.
    Then, unless `unlogged_only`, a row per data file a model read in
    earlier runs that is no longer under its sources' locations, by path (a
    file landed again with another time is still there): gone true;
    source_id, file_modified_at, file_size, is_data and logged null. A DMS
    source TRUNCATE deletes the table's files (HandleSourceTableTruncated),
    and the table would keep the rows the source no longer has, silently:
    the model's run fails instead (_cdc_files_gone_error). Not checked: the models of `skip` (a first run
    or full refresh: their log is dropped) and those with a source set to
    files_removed: ignore (files leave on purpose: a lifecycle rule,
    archiving). Both kinds of row come from one join of the listing and the
    logs, each read once. `check`: fail, naming the fix, when a source's
    file listing was not staged. -#}
{% macro _cdc_listing_sql(pairs, unlogged_only=false, check=false, landing=none, skip=[]) %}
    {%- set branches = [landing] if landing else [] -%}
    {%- set unchecked = skip | list -%}
    {%- for pair_model, node in pairs -%}
        {%- set listing = node.schema ~ '.' ~ (node.identifier or node.name) ~ '__files' -%}
        {%- if check and not _cdc_table_exists(node.schema, (node.identifier or node.name) ~ '__files') -%}
            {%- do exceptions.raise_compiler_error(
                "model '" ~ pair_model.name ~ "': the file listing " ~ listing ~ " of source " ~ node.source_name ~ "."
                ~ node.name ~ " does not exist. Bronze tables are staged by the on-run-start hook; run "
                ~ "`dbt run-operation stage_bronze_sources` if hooks were skipped.") -%}
        {%- endif -%}
        {%- set branch -%}
                select
                    {{ sql_string(node.unique_id) }} as source_id,
                    _metadata.file_path as file_path,
                    _metadata.file_modification_time as file_modified_at,
                    _metadata.file_size as file_size,
                    _metadata.file_name rlike {{ sql_string(bronze_external_config(node)['file_pattern']) }} as is_data
                from {{ listing }}
        {%- endset -%}
        {%- if not landing and branch not in branches -%}{%- do branches.append(branch) -%}{%- endif -%}
        {%- if bronze_external_config(node)['files_removed'] == 'ignore' -%}{%- do unchecked.append(pair_model.name) -%}{%- endif -%}
    {%- endfor -%}
    {%- set checked = [] -%}
    {%- for pair_model, node in pairs if pair_model.name not in unchecked -%}
        {%- do checked.append(sql_string(pair_model.name)) -%}
    {%- endfor -%}
    {#- the pairs are few: broadcast. The logs, a row per model and path,
        are joined in full, not broadcast: their rows that no listed file
        matches are the gone files, and both sides are shuffled once (as
        many Spark jobs as the broadcast join without the gone files) -#}
    select
        coalesce(f.model_name, l.model_name) as model_name,
        f.source_id,
        coalesce(f.file_path, l.file_path) as file_path,
        f.file_modified_at,
        f.file_size,
        f.is_data,
        case when f.file_path is not null then {{ _cdc_logged('l.versions', 'f') }} end as logged,
        f.file_path is null as gone
    from (
        select /*+ broadcast(p) */ p.model_name, f.*
        from ({{ branches | join('\n    union all\n') }}) as f
        {#- (a left join: a file of the landing scan that no source's location
            holds keeps a null model_name, which _cdc_list_run_files checks;
            the pairs one VALUES list, not a UNION ALL of a select per pair,
            whose plan grows with the pairs: the query of 200 sources took
            4.2 s that way, 1.0 s this way, 2026-12-05) #}
        left join (
            select * from values
            {%- for pair_model, node in pairs %}
                ({{ sql_string(pair_model.name) }}, {{ sql_string(node.unique_id) }}){{ ',' if not loop.last }}
            {%- endfor %}
                as pairs(model_name, source_id)
        ) as p
            on f.source_id = p.source_id
    ) as f
    full join (
        select model_name, file_path, collect_set(named_struct('t', file_modified_at, 's', file_size)) as versions,
            {{ 'model_name in (' ~ checked | unique | join(', ') ~ ')' if checked else 'false' }}
                and bool_or(coalesce(status, '') <> 'ignored') as checked
        from ({{ _cdc_logged_files_sql(pairs | map(attribute=0) | list) }}) as logged
        group by model_name, file_path
    ) as l
        on l.model_name = f.model_name and l.file_path = f.file_path
    where f.file_path is not null
        {%- if unlogged_only %} and not {{ _cdc_logged('l.versions', 'f') }}
        {%- else %} or l.checked
        {%- endif %}
{% endmacro %}

{#- Whether a listed file (`file`: the alias of a row with file_modified_at
    and file_size) is one of the versions of its path the model logged
    (`versions`: an array of structs t, the modification time, and s, the
    size, from cdc_file_log): a file landed again under its name with
    another time, or with the same time and another size (a copy that keeps
    times), is new. A logged size of NULL (a model that does not read
    through cdc_changes(), which logs none) matches any size. An erasure
    (lakehouse erase) rewrites a landed file without the subject's rows
    and keeps its time; it logs the rewritten version (status 'erased')
    before it replaces the file, so that it is not read again. A file
    landed again with the same time and the same size is not told apart
    (that would take reading every file). -#}
{% macro _cdc_logged(versions, file) -%}
    coalesce(exists({{ versions }}, v -> v.t = {{ file }}.file_modified_at
                                        and (v.s is null or v.s = {{ file }}.file_size)), false)
{%- endmacro %}

{#- The file log rows (model_name, file_path, file_modified_at, file_size,
    status) of `models`, each schema's cdc_file_log read once for all its
    models -#}
{% macro _cdc_logged_files_sql(models) %}
    {%- set logs = {} -%}
    {%- for log_model in models -%}
        {%- set log_relation = adapter.get_relation(database=none, schema=log_model.schema, identifier='cdc_file_log') -%}
        {%- if log_relation is not none -%}
            {%- do logs.setdefault(log_relation | string, []).append(sql_string(log_model.name)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for relation, names in logs.items() %}
            select model_name, file_path, file_modified_at, file_size, status from {{ relation }}
            where model_name in ({{ names | unique | join(', ') }})
            {{- '\n            union all' if not loop.last }}
    {%- else %}
            select cast(null as string) as model_name, cast(null as string) as file_path,
                cast(null as timestamp) as file_modified_at, cast(null as bigint) as file_size,
                cast(null as string) as status
            where false
    {%- endfor %}
{% endmacro %}

{#- Per model of a listing's rows (_cdc_listing_sql), its gone files:
    files_gone (their number) and examples (the first three paths, as a
    JSON array) -#}
{% macro _cdc_gone_columns() %}
    {{ return('count_if(gone) as files_gone, '
              ~ 'to_json(slice(sort_array(collect_list(case when gone then file_path end)), 1, 3)) as examples') }}
{% endmacro %}

{#- Fails the run of `model_name`, whose earlier files are gone
    (_cdc_gone_columns), naming both ways out -#}
{% macro _cdc_files_gone_error(model_name, files_gone, examples) %}
    {%- do exceptions.raise_compiler_error("model '" ~ model_name ~ "': " ~ files_gone ~ " file(s) it read in earlier "
        ~ "runs are gone from its source's location (" ~ examples | join(', ')
        ~ (', ...' if files_gone > examples | length else '') ~ "). Nothing was applied. AWS DMS deletes a "
        ~ "table's files when the source table is truncated (HandleSourceTableTruncated), and the table would "
        ~ "keep rows the source no longer has. To mirror what the files hold now (also after moving the "
        ~ "source's location), rebuild from them: `dbt build --full-refresh -s " ~ model_name ~ "+`; its kept "
        ~ "changes and the SCD2 history built from them are rebuilt from those files too, so versions only the "
        ~ "gone files held are lost (copy those tables first to keep them). If files leave the folder on "
        ~ "purpose (a lifecycle rule, archiving), set `files_removed: ignore` in the source's meta.external.") -%}
{% endmacro %}

{#- Whether `schema`.`identifier` exists, by its name only. Not dbt's
    get_relation: the bronze schema is not in dbt's cache, and listing it
    uncached (`show table extended`) reads every table's metadata, which
    fails while another thread drops a table (each run dropped its
    `__new_lines__` table until 2026-11-29): dbt-spark then reports the
    schema empty (seen on the cluster target, 4 threads). -#}
{% macro _cdc_table_exists(schema, identifier) %}
    {%- if run_query('show schemas like ' ~ sql_string(schema)).rows | length == 0 -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(run_query('show tables in ' ~ schema ~ ' like ' ~ sql_string(identifier)).rows | length > 0) }}
{% endmacro %}

{#- on-run-start (stage_bronze_sources): the files of every selected model
    that reads a staged source, listed once for the run in one query whose
    rows are collected (a few per model and source: no scratch file, no
    cached table, whose plan reads the file logs and so would be recomputed
    after each model's file log write). Each model that will read files
    gets them as values in a global temporary view (_cdc_run_files_name):
    its unlogged files, or every file for a model whose run the hook
    foresees as a first run or full refresh (_cdc_foresee_full_read). Then
    the view of the listed models' names, which tells a model the hook
    listed (replacing, 2026-11-29, a listing written to scratch files and
    read back by every model: 0.6-0.8 s more per run of one model on the
    2-core machine, docs/benchmark.md). -#}
{% macro _cdc_list_run_files(staged, stamps, deferred) %}
    {%- if flags.WHICH not in ('run', 'build') or selected_resources is not defined -%}{{ return(none) }}{%- endif -%}
    {%- set pairs = [] -%}
    {%- set full = [] -%}
    {%- for unique_id in selected_resources if unique_id.startswith('model.') and unique_id in graph.nodes -%}
        {%- set node = graph.nodes[unique_id] -%}
        {%- for parent in node.depends_on.nodes if parent in staged -%}
            {%- do pairs.append((node, graph.sources[parent])) -%}
            {%- if node.name not in full and _cdc_foresee_full_read(node) -%}{%- do full.append(node.name) -%}{%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- if pairs | length == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set landing = _cdc_landing_scan(pairs | map(attribute=1) | list, stamps) -%}
    {%- if not landing -%}
        {#- one scan per source reads the sources' `__files` tables -#}
        {%- do _bronze_refresh(deferred) -%}
    {%- endif -%}
    {%- set found = _cdc_collect_run_listing(pairs, landing, full) -%}
    {%- if landing and none in found['models'] -%}
        {#- a file of the landing scan under no source's location: its path
            is not of the form _cdc_landing_scan expects. Listed again, one
            scan per source -#}
        {%- do log('cdc: the run listing found files under no source location in its one scan of '
                   ~ 'the sources\' folders (cdc_run_landing); listing each source on its own', info=true) -%}
        {%- do _bronze_refresh(deferred) -%}
        {%- set found = _cdc_collect_run_listing(pairs, none, full) -%}
    {%- elif landing -%}
        {%- do _bronze_refresh_changed(staged, deferred, found['files']) -%}
    {%- endif -%}
    {%- set names = [] -%}
    {%- for pair_model, node in pairs if '(' ~ sql_string(pair_model.name) ~ ')' not in names -%}
        {%- set name = pair_model.name -%}
        {%- do names.append('(' ~ sql_string(name) ~ ')') -%}
        {%- if name in full or name in found['models'] -%}
            {%- do run_query('create or replace global temporary view ' ~ _cdc_run_files_name(name, name in full)
                             ~ ' as ' ~ _cdc_listed_values(found['listed'].get(name, []), sourced=true)) -%}
        {%- endif -%}
        {%- if name in found['gone'] -%}
            {%- set examples = [] -%}
            {%- for path in found['gone'][name]['examples'] -%}{%- do examples.append(sql_string(path)) -%}{%- endfor -%}
            {%- do run_query('create or replace global temporary view ' ~ _cdc_run_gone_name(name) ~ ' as select '
                             ~ found['gone'][name]['files_gone'] ~ 'L as files_gone, array('
                             ~ examples | join(', ') ~ ') as examples') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do run_query('create or replace global temporary view ' ~ _cdc_run_models_name() ~ ' as '
                     ~ 'select * from values ' ~ names | join(', ') ~ ' as models(model_name)') -%}
{% endmacro %}

{#- Whether the run of `node` (a selected model) will read every file of
    its sources, not only the unlogged ones: is_incremental() will be false
    (no table yet, a view, not incremental, a full refresh) -#}
{% macro _cdc_foresee_full_read(node) %}
    {%- set relation = adapter.get_relation(database=none, schema=node.schema, identifier=node.alias) -%}
    {%- set full_refresh = node.config.get('full_refresh') -%}
    {%- set full_refresh = flags.FULL_REFRESH if full_refresh is none else full_refresh -%}
    {{ return(node.config.get('materialized') != 'incremental' or relation is none or relation.is_view
              or full_refresh) }}
{% endmacro %}

{#- The run's listing, from `landing` (_cdc_landing_scan) or one scan per
    source (none), collected in one query: a row per model and source.
    Returns {'models': the names of the models with a file their log does
    not hold (none among them: a landed file no source claimed); 'files':
    source unique_id -> a digest of its files' paths, times and sizes: their
    number and the XOR of their hashes, which grows with no file's count and
    needs no sort; 'listed': model name -> its files as lists of text
    (source_id, path, modification time in microseconds, size, is_data,
    logged): the unlogged ones, or all of them for the models of `full`;
    'gone': model name -> {files_gone, examples} for the models whose
    earlier files are gone (_cdc_listing_sql's gone rows)}. -#}
{% macro _cdc_collect_run_listing(pairs, landing, full) %}
    {%- set names = [] -%}
    {%- for name in full -%}{%- do names.append(sql_string(name)) -%}{%- endfor -%}
    {%- set wanted = 'not logged' ~ (' or model_name in (' ~ names | join(', ') ~ ')' if names else '') -%}
    {%- set query -%}
        select model_name, source_id, count_if(not logged) > 0 as has_new,
            concat_ws(':', cast(count(*) as string),
                      cast(bit_xor(xxhash64(file_path, unix_micros(file_modified_at), file_size)) as string)) as files,
            to_json(collect_list(case when {{ wanted }} then array(
                source_id, file_path, cast(unix_micros(file_modified_at) as string), cast(file_size as string),
                cast(is_data as string), cast(logged as string)) end)) as listed,
            {{ _cdc_gone_columns() }}
        from ({{ _cdc_listing_sql(pairs, landing=landing, skip=full) }}) as listed
        group by model_name, source_id
    {%- endset -%}
    {#- a model's gone files are the rows of its group without a source -#}
    {%- set found = {'models': [], 'files': {}, 'listed': {}, 'gone': {}} -%}
    {%- for row in run_query(query) -%}
        {%- if row['files_gone'] > 0 -%}
            {%- do found['gone'].update({row['model_name']: {'files_gone': row['files_gone'],
                                                             'examples': fromjson(row['examples'])}}) -%}
        {%- elif row['has_new'] and row['model_name'] not in found['models'] -%}
            {%- do found['models'].append(row['model_name']) -%}
        {%- endif -%}
        {%- if row['source_id'] is not none -%}
            {%- do found['files'].update({row['source_id']: row['files']}) -%}
        {%- endif -%}
        {%- if row['source_id'] is not none and row['model_name'] is not none -%}
            {%- do found['listed'].setdefault(row['model_name'], []).extend(fromjson(row['listed'])) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(found) }}
{% endmacro %}

{#
    One file listing for all of a run's sources (`nodes`), when their
    locations allow it: a binaryFile table `<schema>.cdc_run_landing`
    (schema: the first source's) over a glob naming every location, listed
    once per run in parallel, rather than a scan of each source's
    `__files` table (at 200 sources 4.5-8.5 s for that union, against 0.6 s
    for the glob and 0.5 s for its refresh: 2026-11-26, 3 files each).
    Each file goes to the sources whose location holds it, by the prefix
    of its path (`file:` and the location, for a local one). Returns the SQL
    of the files (source_id, file_path, file_modified_at, file_size,
    is_data), or none when a location is relative, holds a character that a
    path URI or a glob would rewrite (only letters, digits and `._=-` in
    its names), sits inside another, or the locations are not on one file
    system: the run then scans each source. A file the prefixes do not
    place makes the run list again, one scan per source
    (_cdc_list_run_files).
#}
{% macro _cdc_landing_scan(nodes, stamps) %}
    {%- set locations = {} -%}
    {%- set seen = [] -%}
    {%- set plain = '^(/|[a-z][a-z0-9+.-]*://[A-Za-z0-9.:-]+/)([A-Za-z0-9._=-]+/)*[A-Za-z0-9._=-]+$' -%}
    {%- for node in nodes if node.unique_id not in seen -%}
        {%- set location = bronze_external_config(node)['location'].rstrip('/') -%}
        {%- if not modules.re.match(plain, location) or modules.re.search('/[.][.]?(/|$)', location) -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do seen.append(node.unique_id) -%}
        {%- do locations.setdefault(location, []).append(node) -%}
    {%- endfor -%}
    {%- set paths = locations.keys() | sort -%}
    {%- for path in paths -%}
        {%- for other in paths if other != path and other.startswith(path ~ '/') -%}
            {{ return(none) }}
        {%- endfor -%}
    {%- endfor -%}
    {#- the common folder (scheme and authority included), then each location under it -#}
    {%- set root = _cdc_common_folder(paths) -%}
    {#- one file system: a URI's scheme and authority are common to all -#}
    {%- for path in paths if '://' in path and root.split('/') | length < 3 -%}{{ return(none) }}{%- endfor -%}
    {%- set glob = paths[0] if paths | length == 1
                   else root ~ '/{' ~ paths | map('replace', root ~ '/', '', 1) | join(',') ~ '}' -%}
    {%- set table = nodes[0].schema ~ '.cdc_run_landing' -%}
    {%- do _bronze_external_table(table, none, 'binaryFile', {'path': glob, 'recursiveFileLookup': 'true'},
                                  stamps.get(nodes[0].schema | lower)) -%}
    {%- set sources = [] -%}
    {%- for path, held in locations.items() -%}
        {%- for node in held -%}
            {%- do sources.append('(' ~ sql_string(node.unique_id) ~ ', '
                                  ~ sql_string(('file:' if path.startswith('/') else '') ~ path ~ '/') ~ ', '
                                  ~ sql_string(bronze_external_config(node)['file_pattern']) ~ ')') -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set query -%}
                select /*+ broadcast(s) */
                    s.source_id,
                    f.file_path,
                    f.file_modified_at,
                    f.file_size,
                    f.file_name rlike s.file_pattern as is_data
                {#- (no distinct: the locations are distinct and none is
                    inside another, checked above, so each file is listed
                    once) #}
                from (
                    select
                        _metadata.file_path as file_path,
                        _metadata.file_name as file_name,
                        _metadata.file_modification_time as file_modified_at,
                        _metadata.file_size as file_size
                    from {{ table }}
                ) as f
                left join (
                    select * from values {{ sources | join(', ') }} as sources(source_id, prefix, file_pattern)
                ) as s
                    on startswith(f.file_path, s.prefix)
    {%- endset -%}
    {{ return(query) }}
{% endmacro %}

{#- on-run-end: the run's listing is no longer needed -#}
{% macro cdc_drop_run_listing() %}
    {%- if execute and flags.WHICH in ('run', 'build') -%}
        {#- found by name: a hook that failed midway leaves some behind -#}
        {%- set views = run_query("show views in global_temp like '" ~ _cdc_run_models_name() ~ '|'
                                  ~ _cdc_run_files_prefix() ~ "*'") -%}
        {%- for name in views.columns[1].values() -%}
            {%- do run_query('drop view if exists global_temp.' ~ name) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{#
    The lines of just the new files, as an external text table
    `<source>__new_lines__<model>` in the bronze schema (dropping it never
    touches the files): its path is a glob naming each new file, so a run
    reads the files landed since the last one, not every file ever landed
    (a `_metadata.file_path` filter on the whole folder's table does not
    prune the scan). CSV and Debezium only: Parquet files are read one by
    one anyway. Made once, then each run with new files points it at them
    (`alter table ... set location`, which refreshes Spark's cached listing
    of it): two statements instead of a drop, a create and a refresh
    (builds of the sample, 2026-11-29, the 2-core machine: about 0.075 s
    per run, in a run whose other statements were 34-42 % slower, against
    0.146 s; docs/benchmark.md). Not a temporary view:
    Spark 3.5 does not pass a file source's `_metadata` columns through a
    view, and the lines read them.
#}
{% macro _cdc_new_lines_table(node) -%}
    {{ return(node.schema ~ '.' ~ (node.identifier or node.name) ~ '__new_lines__' ~ this.identifier) }}
{%- endmacro %}

{#- Whether the new files are read through that table: text formats, and
    paths a glob can name (an escaped character, e.g. %20, cannot) -#}
{% macro _cdc_new_lines_usable(node, paths) -%}
    {%- set escaped = [] -%}
    {%- for path in paths if '%' in path -%}{%- do escaped.append(path) -%}{%- endfor -%}
    {{ return(bronze_external_config(node)['format'] in ('csv', 'debezium') and paths | length > 0
              and escaped | length == 0) }}
{%- endmacro %}

{% macro _cdc_stage_new_lines(node, cfg, paths) %}
    {%- set table = _cdc_new_lines_table(node) -%}
    {%- if not _cdc_new_lines_usable(node, paths) -%}
        {%- do run_query('drop table if exists ' ~ table) -%}
        {{ return(none) }}
    {%- endif -%}
    {#- the folder every new file is under, then each file relative to it -#}
    {%- set folder = _cdc_common_folder(paths) -%}
    {%- set names = [] -%}
    {%- for path in paths -%}
        {#- glob metacharacters in a name are taken literally -#}
        {%- set name = path[folder | length + 1:] -%}
        {%- for char in ['\\', '{', '}', '[', ']', '*', '?', ','] -%}
            {%- set name = name.replace(char, '\\' ~ char) -%}
        {%- endfor -%}
        {%- do names.append(name) -%}
    {%- endfor -%}
    {%- set glob = sql_string(folder ~ '/{' ~ names | join(',') ~ '}') -%}
    {%- do run_query('create table if not exists ' ~ table ~ " (`value` string) using text options ('lineSep' '\\n', 'path' "
                     ~ glob ~ ')') -%}
    {%- do run_query('alter table ' ~ table ~ ' set location ' ~ glob) -%}
{% endmacro %}

{#- The deepest folder that holds every path of `paths` (file paths or
    folders), without a trailing `/`: '' for the root of a local file
    system; a URI's scheme and authority when that is all they share. -#}
{% macro _cdc_common_folder(paths) %}
    {%- set parts = paths[0].split('/')[:-1] -%}
    {%- set common = {'n': parts | length} -%}
    {%- for path in paths -%}
        {%- set other = path.split('/') -%}
        {%- for i in range(common['n']) if i >= other | length - 1 or other[i] != parts[i] -%}
            {%- do common.update({'n': [common['n'], i] | min}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(parts[:common['n']] | join('/')) }}
{% endmacro %}

{#
    Debezium files may hold schema-change events and `null` lines (the
    tombstone written after a delete): not changes, skipped by bronze by
    one rule (_bronze_debezium_skipped), but counted per file here, in the cached
    `<model>__cdc_events`, for the file log (cdc_apply), so that every line
    but a blank one is accounted for. Only the new files' lines are read.
#}
{% macro _cdc_count_skipped_events(node, cfg, paths) %}
    {%- if cfg['format'] != 'debezium' -%}{{ return(none) }}{%- endif -%}
    {%- set events = this.identifier ~ '__cdc_events' -%}
    {%- do run_query('drop view if exists ' ~ events) -%}
    {%- if paths | length == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set literals = [] -%}
    {%- for path in paths -%}{%- do literals.append(sql_string(path)) -%}{%- endfor -%}
    {%- set query -%}
        cache table {{ events }} as
        select file_path, count(*) as events_skipped
        from (
            select file_path, body, from_json(body, 'map<string, string>') as fields,
                   {{ _bronze_json_one_value('text') }} as one_value
            from (
                select file_path, text, {{ _bronze_change_json(cfg, 'text') }} as body
                from (
                    select _metadata.file_path as file_path, {{ _bronze_line_text('value') }} as text
                    from {{ _cdc_new_lines_table(node) if _cdc_new_lines_usable(node, paths)
                            else node.schema ~ '.' ~ (node.identifier or node.name) ~ '__lines' }}
                    where _metadata.file_path in ({{ literals | join(', ') }})
                ) as trimmed
            ) as raw
        ) as lines
        where {{ _bronze_debezium_skipped(cfg, 'one_value', 'body', 'fields') }}
        group by file_path
    {%- endset -%}
    {%- do run_query(query) -%}
{% endmacro %}
