{#
    The change rows a CDC silver model reads from one bronze source, typed.

    Use it as the import CTE of a silver model:
        with changes as ({{ cdc_changes(source('dms_retail', 'customer_master')) }})

    - On an incremental run only files not yet applied to this model are read
      (the model's entries in cdc_file_log); the filter is on the file scan.
      When there is none, the SQL has the columns and no row (no parse to
      analyse: cdc_apply stops at its first step).
    - Each source column is cast to its `data_type` from the source YAML; a
      row that could not be read (bronze's `_cdc_malformed`), a value that
      does not cast or that the cast would change (lossless_cast_check), a
      missing key, an unknown operation or a missing sequence sets
      `_cdc_reject_reason`, and `_cdc_raw` keeps the row as written (the raw
      line, or JSON of the fields) for the quarantine table. It keeps every
      row's where a row that parsed may still be quarantined: on an
      incremental run (a change older than a delete forgotten after
      cdc_tombstone_retention_hours: late_beyond_retention), and when the
      model derives a key, sequence or operation column itself (missing_key,
      missing_sequence, unknown_op; a key or sequence named like a column
      of the files, in any letter case, is that column, checked here).
      Otherwise, as in a full load, only the
      rejects and the rows with a TOAST placeholder (unavailable_value, on
      a key the table does not hold) carry it.
    - `_cdc_extra` carries the values of columns a file has and the YAML
      does not declare; cdc_apply adds them to the table (schema evolution),
      or, when the source does not allow it, the row is rejected.
    - Validates the model's CDC settings at compile time.
    - Compiled for sqlfluff (var `sqlfluff_lint`, set in .sqlfluff): the
      same columns, selected from the bronze view, without the parse
      (_cdc_changes_for_lint).
    - In a dbt unit test (the source is then the test's input rows, a CTE)
      the rows pass through as given, in the bronze view's columns: the unit
      test checks the model's own cleaning. Typing and rejects are this
      macro's, checked on real files by the pytest suite.
#}
{% macro cdc_changes(source_relation) %}
    {#- (a ref() to an ephemeral model is a CTE too: only a unit test's goes here) -#}
    {%- if source_relation.type == 'cte' and model.resource_type == 'unit_test' -%}
        {{ return(_cdc_unit_test_changes(source_relation)) }}
    {%- endif -%}
    {%- set node = _cdc_source_node(source_relation) -%}
    {%- if node is none -%}
        {#- parsing: the graph is not there yet -#}
        {{ return('select 1 as _cdc_placeholder') }}
    {%- endif -%}
    {%- set columns = bronze_file_columns(node) -%}
    {%- set produced = cdc_column_names('provenance') + (columns | map(attribute='name') | list) -%}
    {%- set cfg = cdc_config(check_columns=none) if config.get('incremental_strategy') == 'cdc_merge' else none -%}
    {#- (the settings name columns in any letter case: each spelled as here) -#}
    {%- set spelled = {} -%}
    {%- for name in produced -%}{%- do spelled.update({name | lower: name}) -%}{%- endfor -%}
    {%- set sequence_by = [] -%}
    {%- if cfg is not none -%}
        {#- the model may rename or derive columns: only sequence columns must come from here -#}
        {%- for column in cfg['sequence_by'] -%}
            {%- if column | lower not in spelled -%}
                {%- do exceptions.raise_compiler_error(
                    "model '" ~ model.name ~ "': cdc_sequence_by names column '" ~ column ~ "', which "
                    ~ "cdc_changes() does not produce (it produces " ~ produced | join(', ')
                    ~ "). Fix cdc_sequence_by in its config().") -%}
            {%- endif -%}
            {%- do sequence_by.append(spelled[column | lower]) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set key_columns = [] -%}
    {%- if cfg is not none -%}
        {%- for key in cfg['keys'] if key | lower in spelled and spelled[key | lower] not in sequence_by -%}
            {%- do key_columns.append(spelled[key | lower]) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if var('sqlfluff_lint', false) -%}
        {{ return(_cdc_changes_for_lint(source_relation, columns)) }}
    {%- endif -%}
    {%- set operations = cfg['operations'] if cfg is not none else ['I', 'U', 'D'] -%}
    {#- the merge strategy's own reject rules (_cdc_order_batch) see what the
        model makes of these rows: a key, a sequence column other than the
        files' or an operation column the model derives may be NULL or
        unknown there although the row parsed here -#}
    {%- set checked_here = ['_cdc_phase', '_cdc_commit_ts', '_cdc_change_seq'] -%}
    {%- set keep_raw = is_incremental() or (cfg is not none and (
            key_columns | length < cfg['keys'] | length
            or sequence_by | reject('in', checked_here) | list | length > 0
            or cfg['operation_column'] | lower != '_cdc_op')) -%}
    {%- set found = _cdc_new_files(node, is_incremental()) -%}
    {%- set files = found['paths'] if found is not none else none -%}
    {%- set typed = {} -%}
    {%- for column in columns -%}
        {#- bronze hands every value over as text: a cast to binary would
            store the text's bytes (a Parquet value's base64), not the value -#}
        {%- if (column.data_type or '') | lower | trim == 'binary' -%}
            {%- do exceptions.raise_compiler_error("source " ~ node.source_name ~ "." ~ node.name ~ ", column "
                ~ column.name ~ ": declared binary, but bronze reads every value as text (a Parquet binary "
                ~ "value as base64, a CSV field as written), which a cast to binary would store as the text's "
                ~ "bytes. Declare it string and decode it in the model (unbase64(" ~ column.name
                ~ ") for Parquet). Nothing was read.") -%}
        {%- endif -%}
        {%- do typed.update({column.name: column.data_type or 'string'}) -%}
    {%- endfor -%}
    {#- Debezium's placeholder for an unchanged TOAST value: not a value; the
        column is listed in _cdc_unavailable and cdc_apply keeps the value
        the key had before -#}
    {%- set external = bronze_external_config(node) -%}
    {%- set schema_evolution = external['schema_evolution'] -%}
    {%- set placeholder = _cdc_unavailable_placeholder() if external['format'] == 'debezium' else none -%}
    {%- set unavailable = [] -%}
    {%- if placeholder -%}
        {%- for name in typed if name not in key_columns -%}
            {%- do unavailable.append(name) -%}
        {%- endfor -%}
    {%- endif %}
    {%- if found is not none and found['nothing_new'] %}
    {{ _cdc_nothing_new_marker() }}
    {%- elif found is not none %}
    {{ _cdc_new_files_marker(found) }}
    {%- endif %}
    select
        {{- _cdc_changes_columns(typed) }}
        case when {{ 'true' if keep_raw else '_cdc_reject_reason is not null or size(_cdc_unavailable) > 0' }} then coalesce(_cdc_raw_line, to_json(named_struct(
            {%- for column in ['_cdc_op', '_cdc_commit_ts', '_cdc_change_seq'] + (typed.keys() | list) %}
            '{{ column }}', _raw_{{ column }},
            {%- endfor %}
            'undeclared_columns', _cdc_extra
        ))) end as _cdc_raw
    from (
        select
            _cdc_phase,
            _cdc_op,
            try_cast(_cdc_commit_ts as timestamp) as _cdc_commit_ts,
            case
                when _cdc_phase = 0 then coalesce(try_cast(_cdc_change_seq as decimal(38, 0)), 0)
                else try_cast(_cdc_change_seq as decimal(38, 0))
            end as _cdc_change_seq,
            _cdc_file,
            _cdc_file_modified_at,
            _cdc_row,
            {%- for name, data_type in typed.items() %}
            {%- if name in unavailable %}
            case when `{{ name }}` <> {{ sql_string(placeholder) }} then {{ _cdc_cast(name, data_type) }} end as `{{ name }}`,
            {%- else %}
            {{ _cdc_cast(name, data_type) }} as `{{ name }}`,
            {%- endif %}
            {%- endfor %}
            {%- if unavailable %}
            filter(array(
                {%- for name in unavailable %}
                case when `{{ name }}` = {{ sql_string(placeholder) }} then {{ sql_string(name) }} end{{ ',' if not loop.last }}
                {%- endfor %}
            ), c -> c is not null) as _cdc_unavailable,
            {%- else %}
            cast(array() as array<string>) as _cdc_unavailable,
            {%- endif %}
            _cdc_file_rows,
            _cdc_file_held,
            _cdc_raw_line,
            coalesce(_cdc_extra, cast(map() as map<string, string>)) as _cdc_extra,
            coalesce(case
                when _cdc_malformed is not null then _cdc_malformed
                {#- columns the YAML does not declare: added to the table
                    (as string) under schema evolution, else a reject -#}
                {%- if not schema_evolution %}
                when size(_cdc_extra) > 0 then concat('unexpected_column: ', array_join(array_sort(map_keys(_cdc_extra)), ', '),
                    ' (the source does not allow schema evolution)')
                {%- endif %}
                when exists(map_keys(_cdc_extra), k -> {{ _cdc_unusable_column('k') }})
                    then concat('unexpected_column: ', array_join(filter(array_sort(map_keys(_cdc_extra)),
                        k -> {{ _cdc_unusable_column('k') }}), ', '), ' is not usable as a column name')
            end,
            {%- if external['format'] == 'csv' and not external['header'] and external['full_load_op'] == 'included' %}
            {#- a full-load file without Op (DMS's default) read as having one -#}
            case when _cdc_phase = 0 and _cdc_op not in ('{{ operations | join("', '") }}')
                then concat('unknown_op: ', _cdc_op, {{ sql_string(_cdc_header_hint(external, 'full_load_op')) }}) end,
            {%- endif %}
            {#- a CDC row without Op: CdcInsertsOnly's files have none -#}
            {{ _cdc_reject_reason(key_columns, '_cdc_op', operations, [], keyless="_cdc_op <=> 'T'", blank_is_missing=true,
                                  null_op_hint=_cdc_header_hint(external, 'cdc_op')
                                      if external['format'] != 'debezium' and external['cdc_op'] == 'included') }},
            case
                when _cdc_commit_ts is null or trim(_cdc_commit_ts) = ''
                    then {{ sql_string('missing_sequence: commit timestamp' ~ _cdc_header_hint(external, 'timestamp_column')) }}
                {#- a date and a time (an offset allowed), as DMS and bronze write it: Spark's cast
                    also takes '2025' or '1', which a headerless row read one
                    field off would hold here -#}
                when try_cast(_cdc_commit_ts as timestamp) is null
                    or trim(_cdc_commit_ts) not rlike
                        '^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$'
                    then 'unparseable_value: commit timestamp'
                when _cdc_phase = 1 and (_cdc_change_seq is null or trim(_cdc_change_seq) = '')
                    then {{ sql_string('missing_sequence: change sequence' ~ _cdc_header_hint(external, 'sequence_column')) }}
                {#- a full-load row's sequence may be empty, never text that is
                    not a number (a headerless row read one field off) -#}
                when (_cdc_phase = 1 or trim(_cdc_change_seq) <> '') and try_cast(_cdc_change_seq as decimal(38, 0)) is null
                    then 'unparseable_value: change sequence'
                {%- for name, data_type in typed.items() if data_type | lower != 'string' %}
                {%- set given = '`' ~ name ~ '` is not null' ~ (' and `' ~ name ~ '` <> ' ~ sql_string(placeholder) if name in unavailable else '') %}
                when {{ given }} and {{ _cdc_cast(name, data_type) }} is null
                    then 'unparseable_value: {{ name }}'
                when {{ given }} and not ({{ lossless_cast_check('`' ~ name ~ '`', data_type) }})
                    then 'lossy_value: {{ name }} ({{ data_type }})'
                {%- endfor %}
            end) as _cdc_reject_reason,
            {%- for column in ['_cdc_op', '_cdc_commit_ts', '_cdc_change_seq'] + (columns | map(attribute='name') | list) %}
            `{{ column }}` as _raw_{{ column }}{{ ',' if not loop.last }}
            {%- endfor %}
        {%- if files is none %}
        {# only compiled (no listing): the SQL shown parses files, and reads none #}
        from ({{ bronze_select(node, []) }}) as bronze
        {%- elif files | length == 0 %}
        from ({{ bronze_no_rows(node) }}) as bronze
        {%- else %}
        {%- set lines = _cdc_new_lines_table(node) if _cdc_new_lines_usable(node, files) else none %}
        from ({{ bronze_select(node, files, lines, _cdc_csv_records(node, cfg, files, lines, found['bytes'])) }}) as bronze
        {%- endif %}
    ) as typed
{% endmacro %}

{#- What a reject on a field DMS or Debezium adds to each row says: the
    setting that writes the field (`setting`: timestamp_column,
    sequence_column, full_load_op or cdc_op), since a task without it has
    every row so rejected. -#}
{% macro _cdc_header_hint(external, setting) %}
    {%- set name = external.get(setting) -%}
    {%- if setting == 'cdc_op' -%}
        {{ return(" (no Op field: CDC files written with CdcInsertsOnly=true and IncludeOpForFullLoad=false "
                  ~ "have none; if so, set cdc_op: absent on the source)") }}
    {%- elif setting == 'full_load_op' -%}
        {{ return(" in a full-load file, read as its Op field: a full-load file without Op (DMS's default, "
                  ~ "IncludeOpForFullLoad=false) needs full_load_op: absent on the source") }}
    {%- elif external['format'] == 'debezium' -%}
        {{ return(' (field ' ~ name ~ ' empty or absent: ExtractNewRecordState writes it with add.fields='
                  ~ ('source.ts_ms' if setting == 'timestamp_column' else 'lsn') ~ "; the source's " ~ setting
                  ~ ' names it)') }}
    {%- elif setting == 'timestamp_column' -%}
        {{ return(' (column ' ~ name ~ ' empty or absent: DMS writes it with TimestampColumnName=' ~ name
                  ~ " on the S3 endpoint; the source's timestamp_column names it)") }}
    {%- else -%}
        {{ return(' (column ' ~ name ~ ' empty or absent: DMS writes it with a transformation rule that '
                  ~ 'adds the header column AR_H_CHANGE_SEQ as ' ~ name ~ "; the source's sequence_column names it)") }}
    {%- endif -%}
{% endmacro %}

{#- A CSV source's new records (bronze_csv_records), written once to the
    batch's scratch folder (`<batch>/records`, emptied with the batch at the
    end of the run) and returned as a view; none for other formats, and
    outside the cdc_merge strategy (`cfg` none), whose run does not empty
    the batch. The parse reads its records twice, for each file's facts and
    for the rows: written once, the lines are numbered and joined into
    records once, not in each read, and the model's view is smaller to
    analyse. Written with the batch's adaptive setting (`large`, the
    records' branches: _bronze_csv_records). -#}
{% macro _cdc_csv_records(node, cfg, files, lines, bytes) %}
    {%- if cfg is none or bronze_external_config(node)['format'] != 'csv' -%}{{ return(none) }}{%- endif -%}
    {%- set large = _cdc_set_adaptive(bytes, cfg) -%}
    {{ return(_cdc_scratch_write(this.schema, _cdc_batch_name() ~ '_records', bronze_csv_records(node, files, lines, large),
                                 folder=_cdc_batch_name() ~ '/records', columns=_bronze_csv_record_columns())) }}
{% endmacro %}

{#- The name of the run's batch: its scratch folder and view (_cdc_scratch) -#}
{% macro _cdc_batch_name() %}
    {{ return(this.identifier ~ '__cdc_batch') }}
{% endmacro %}

{#- The comment cdc_changes puts in a model's SQL when its run found no
    new file: the run then creates no view of the model and applies
    nothing (_cdc_nothing_new). Named after the invocation, so SQL compiled
    by an earlier command never matches. -#}
{% macro _cdc_nothing_new_marker() -%}
    /* cdc_changes: no new file for this model in run {{ invocation_id }} */
{%- endmacro %}

{#- What the run's listing found (_cdc_new_files' `found`), in the model's
    SQL for cdc_apply (the compile and the apply share nothing else): the
    size of the new data files and how many other files were listed (logged
    as ignored). _cdc_new_files_facts reads it back: {'bytes', 'ignored'},
    or none when the SQL holds no such line (a model that does not read
    through cdc_changes()). -#}
{% macro _cdc_new_files_marker(found) -%}
    /* cdc_changes: new files of {{ found['bytes'] | int }} bytes, {{ found['ignored'] | int }} not data */
{%- endmacro %}

{% macro _cdc_new_files_facts(sql) %}
    {%- set found = modules.re.search('/\\* cdc_changes: new files of ([0-9]+) bytes, ([0-9]+) not data \\*/', sql) -%}
    {{ return({'bytes': found.group(1) | int, 'ignored': found.group(2) | int} if found else none) }}
{% endmacro %}

{#- Whether the model's SQL (`sql`) is that of a run with nothing new. Not
    when on_schema_change asks dbt to compare the model's view with the
    table: the view is then created as usual. -#}
{% macro _cdc_nothing_new(sql) %}
    {{ return(_cdc_nothing_new_marker() in sql and (config.get('on_schema_change') or 'ignore') == 'ignore') }}
{% endmacro %}

{#- A unit test's input rows as cdc_changes() passes rows on: the bronze
    view's columns, and the columns cdc_changes adds, empty -#}
{% macro _cdc_unit_test_changes(source_relation) %}
    select
        *,
        cast(array() as array<string>) as _cdc_unavailable,
        cast(null as string) as _cdc_reject_reason,
        cast(null as string) as _cdc_raw
    from {{ source_relation }}
{% endmacro %}

{% macro _cdc_cast(name, data_type) %}
    {%- if data_type | lower == 'string' -%}
        `{{ name }}`
    {%- else -%}
        try_cast(`{{ name }}` as {{ data_type }})
    {%- endif -%}
{% endmacro %}

{% macro _cdc_source_node(source_relation) %}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {%- for node in graph.sources.values() -%}
        {%- if node.schema == source_relation.schema
              and (node.identifier or node.name) == source_relation.identifier -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {%- do exceptions.raise_compiler_error(
        "cdc_changes(): " ~ source_relation ~ " is not a bronze source declared in YAML") -%}
{% endmacro %}

{#- A column name from a file that cannot become a silver column: not a
    plain identifier, or a name the pipeline itself writes. -#}
{% macro _cdc_unusable_column(name) -%}
    (not {{ name }} rlike '^[a-z_][a-z0-9_]*$' or startswith({{ name }}, '_cdc_') or {{ name }} in ('is_deleted', 'deleted_at'))
{%- endmacro %}

{#- What cdc_changes gives the linter (var `sqlfluff_lint`, which .sqlfluff
    sets): its columns, selected from the bronze view, without the parse or
    a listing of the files. The linter checks the model's own SQL; it never
    reports on text a macro generated, and parsing the 14 KB the parse
    generates made the lint of models/silver/retail take 90.7 s instead of
    2.7 (2026-12-03, the 2-core machine). -#}
{% macro _cdc_changes_for_lint(source_relation, columns) %}
    select
        {{- _cdc_changes_columns(columns | map(attribute='name') | list) }}
        _cdc_raw
    from {{ source_relation }}
{% endmacro %}

{#- The columns cdc_changes gives before `_cdc_raw`, each followed by a
    comma: provenance, the source's columns (`names`), the file facts and
    the row's reject reason. -#}
{% macro _cdc_changes_columns(names) %}
        {%- for name in cdc_column_names('provenance') %}
        {{ name }},
        {%- endfor %}
        {%- for name in names %}
        `{{ name }}`,
        {%- endfor %}
        _cdc_file_rows,
        _cdc_file_held,
        _cdc_unavailable,
        _cdc_extra,
        _cdc_reject_reason,
{%- endmacro %}
