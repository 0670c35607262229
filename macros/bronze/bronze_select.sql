{#
    SQL reading the change rows of one bronze source table, normalised:

      _cdc_phase            0 for full-load (load_pattern) files, 1 for CDC files
      _cdc_op               I/U/D as written (full-load rows without Op: 'I';
                            Debezium c/r -> I, u -> U, d or __deleted -> D,
                            t (truncate, no key) -> T)
      _cdc_commit_ts        the DMS commit-timestamp column, as written
                            (Debezium: source.ts_ms as yyyy-MM-dd HH:mm:ss.SSSSSS)
      _cdc_change_seq       the change-sequence column (AR_H_CHANGE_SEQ; Debezium: the LSN)
      _cdc_file             full path of the file the row came from
      _cdc_file_modified_at when that file landed (file modification time)
      _cdc_row              1-based data row number within the file
      <source columns>      as written (strings; Debezium's epoch numbers of
                            timestamp and date columns as DMS-style text)
      _cdc_malformed        why the row could not be read as a row of this
                            source (NULL when it could): quarantined as is
      _cdc_raw_line         the row exactly as written (CSV), for quarantine
      _cdc_extra            the row's values of columns its file has and the
                            YAML does not declare (map, name lower case ->
                            text): schema evolution adds them to silver
      _cdc_file_rows        the data rows of its file, counted before any
                            field is parsed: the row-conservation check of
                            cdc_apply compares it with the rows that arrive
      _cdc_file_held        why the whole file is held back unread this run
                            (e.g. it does not end with a newline: cut mid-row)

    `files`: the file paths (as `_metadata.file_path` gives them) to read;
    none reads every data file (file_pattern). `lines_table`: a table over
    exactly those files' lines (_cdc_new_files makes one per CDC run): the
    `_metadata.file_path` filter alone does not prune the files Spark reads,
    so without it every landed file would be read and filtered. `records`
    (CSV): a relation holding what bronze_csv_records() selects for the same
    files, written once (a CDC run does: _cdc_csv_records), read in place of
    the lines.
#}
{% macro bronze_select(source_node, files=none, lines_table=none, records=none) %}
    {%- set cfg = bronze_external_config(source_node) -%}
    {%- set base = source_node.schema ~ '.' ~ (source_node.identifier or source_node.name) -%}
    {%- set predicate = _bronze_files_predicate(cfg, files) -%}
    {%- if cfg['format'] == 'csv' -%}
        {%- set records_sql = 'select * from ' ~ records if records
                              else bronze_csv_records(source_node, files, lines_table) -%}
        {{ return(_bronze_csv_rows(source_node, cfg, records_sql)) }}
    {%- elif cfg['format'] == 'parquet' -%}
        {%- if files is none -%}
            {%- set files = run_query('select _metadata.file_path from ' ~ base ~ '__files where '
                                      ~ predicate).columns[0].values() | list -%}
        {%- endif -%}
        {{ return(_bronze_parquet_rows(source_node, cfg, base ~ '__files', files)) }}
    {%- else -%}
        {{ return(_bronze_debezium_rows(source_node, cfg, lines_table or base ~ '__lines', predicate)) }}
    {%- endif -%}
{% endmacro %}

{#- The filter on a bronze table's files: `files` as bronze_select() takes it -#}
{% macro _bronze_files_predicate(cfg, files) %}
    {%- if files is none -%}
        {{ return('_metadata.file_name rlike ' ~ sql_string(cfg['file_pattern'])) }}
    {%- elif files | length == 0 -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set literals = [] -%}
    {%- for file in files -%}{%- do literals.append(sql_string(file)) -%}{%- endfor -%}
    {{ return('_metadata.file_path in (' ~ literals | join(', ') ~ ')') }}
{% endmacro %}

{#- A CSV source's records (_bronze_csv_records) of `files`, read from
    `lines_table` (default: the source's `__lines` table over its folder):
    what _bronze_csv_rows parses. `large`: see _bronze_csv_records. -#}
{% macro bronze_csv_records(source_node, files=none, lines_table=none, large=false) %}
    {%- set cfg = bronze_external_config(source_node) -%}
    {%- set base = source_node.schema ~ '.' ~ (source_node.identifier or source_node.name) -%}
    {%- set phase_expr = 'case when file_name rlike ' ~ sql_string(cfg['load_pattern']) ~ ' then 0 else 1 end' -%}
    {{ return(_bronze_csv_records(lines_table or base ~ '__lines', _bronze_files_predicate(cfg, files), phase_expr,
                                  large)) }}
{% endmacro %}

{#- bronze_select()'s columns and no row, without the parse's SQL (whose
    analysis alone takes most of a second): what a CDC run that found no new
    file reads. -#}
{% macro bronze_no_rows(node) %}
    select
        cast(null as int) as _cdc_phase,
        cast(null as string) as _cdc_op,
        cast(null as string) as _cdc_commit_ts,
        cast(null as string) as _cdc_change_seq,
        cast(null as string) as _cdc_file,
        cast(null as timestamp) as _cdc_file_modified_at,
        cast(null as bigint) as _cdc_row,
        {%- for column in bronze_file_columns(node) %}
        cast(null as string) as `{{ column.name }}`,
        {%- endfor %}
        cast(null as string) as _cdc_malformed,
        cast(null as string) as _cdc_raw_line,
        cast(null as map<string, string>) as _cdc_extra,
        cast(null as bigint) as _cdc_file_rows,
        cast(null as string) as _cdc_file_held
    where false
{% endmacro %}

{#- The common tail: Op and commit time in the DMS form, file columns. -#}
{#- `op_in_file`: SQL, true where the row's file has an Op column (DMS) -#}
{% macro _bronze_op_expr(cfg, phase_expr, op, op_in_file='true') %}
    {%- if cfg['format'] == 'debezium' -%}
        {#- c (create) and r (snapshot read) insert; __deleted marks a
            rewritten delete; t truncates the table; anything else stays as written and is
            quarantined as an unknown operation -#}
        case
            when fields[{{ sql_string(cfg['deleted_column'] | lower) }}] = 'true' then 'D'
            when {{ op }} in ('c', 'r') then 'I'
            when {{ op }} = 'u' then 'U'
            when {{ op }} = 'd' then 'D'
            when {{ op }} = 't' then 'T'
            else {{ op }}
        end
    {%- else -%}
        {#- without Op (full_load_op / cdc_op absent) a row is an insert; a
            CDC file that has an Op column anyway keeps it, an empty one too
            (quarantined as unknown) -#}
        case
            when {{ phase_expr }} = 0 then {{ "'I'" if cfg['full_load_op'] == 'absent' else 'coalesce(' ~ op ~ ", 'I')" }}
            {%- if cfg['cdc_op'] == 'absent' %}
            when not ({{ op_in_file }}) then 'I'
            {%- endif %}
            else {{ op }}
        end
    {%- endif -%}
{% endmacro %}

{#
    CSV, parsed here from the raw lines rather than by Spark's CSV reader:
      1. lines in file order (block start, then read order within the block);
      2. a record ends at a line where the count of `"` so far is even
         (RFC 4180: a newline inside quotes belongs to the value);
      3. each record is checked whole (well-formed quoting, UTF-8, no NUL)
         and split into fields: "" is an empty string, an empty unquoted
         field or the null_value literal is NULL;
      4. fields are mapped to columns by the file's header (header: true) or
         by the declared order (header: false), validated per file. A file
         whose header is refused has all its records quarantined, its first
         one too (as row 0): it may be a row, in a file written without a
         header (AddColumnName=false, DMS's default) under a source that
         declares one, and nothing tells a header from a row there.
    A file whose bytes are not all accounted for by its lines fails the
    query: silent loss is never an option.
#}
{% macro _bronze_csv_rows(node, cfg, records) %}
    {%- set columns = bronze_file_columns(node) -%}
    {%- set data_names = columns | map(attribute='name') | map('lower') | list -%}
    {%- set layouts = {} -%}
    {%- for phase in [0, 1] -%}
        {%- do layouts.update({phase: (bronze_header_columns(cfg, phase) | map('lower') | list) + data_names}) -%}
    {%- endfor -%}
    {%- set known = (bronze_header_columns(cfg) | map('lower') | list) + data_names -%}
    {#- header: false: the last columns marked added_later, which files
        written before the source added them lack -#}
    {%- set added_later = _bronze_added_later(node, columns) if not cfg['header'] else [] -%}
    {#- a data row: not the header, not an empty line -#}
    {%- set is_data_row = "record_no >= " ~ (1 if cfg['header'] else 0) ~ " and record <> ''" -%}
    {#- `records`: SQL of the records (bronze_csv_records, or a scan of them
        written once). They are read twice (the file facts, the rows) as a
        subquery, not a CTE: Spark shuffles a CTE with a non-deterministic
        column (the read order) that is referenced twice, to compute it once -#}
    {#- the file's facts (header, field count, data rows), an aggregate per file:
        only the header record is parsed for it. The header is collected
        (collect_list), not taken by max(): an aggregate whose results are
        all max() of strings or arrays is sort-based, and sorted every
        record by file (2.7 s of a 1M-row full load, measured 2026-11-28) #}
    with facts as (
        select
            file,
            max(phase) as phase,
            {%- if cfg['header'] %}
            get(collect_list(case when record_no = 0 then record end), 0) as header,
            {%- else %}
            mode(case when {{ is_data_row }} then size({{ _bronze_csv_fields('record') }}) end) as field_count,
            {%- endif %}
            {#- the data rows, counted before any is mapped (row conservation) -#}
            count(case when {{ is_data_row }} then 1 end) as file_rows,
            {#- the bytes the lines account for, from this read of the file -#}
            sum(octet_length(text) + 1) as file_bytes,
            max(file_size) as file_size,
            max(file_name) as file_name
        from ({{ records }}) as records
        group by file
    ),

    {#- each file's column names -#}
    named as (
        select
            f.*,
            {%- if cfg['header'] %}
            transform({{ _bronze_csv_fields('header', cfg) }}, n -> lower(trim(n))) as names,
            {{ _bronze_csv_well_formed('header') }} as header_well_formed
            {%- else %}
            slice(case when f.phase = 0 then array({{ _bronze_sql_list(layouts[0]) }})
                       else array({{ _bronze_sql_list(layouts[1]) }}) end,
                  1, f.field_count) as names
            {%- endif %}
        from facts as f
    ),

    {#- per file: the reason to refuse it, where each known column is among
        its fields, and (header) the columns the YAML does not declare -#}
    shaped as (
        select
            f.*,
            {%- for name in known %}
            array_position(f.names, {{ sql_string(name) }}) - 1 as `_p_{{ loop.index }}`,
            {%- endfor %}
            {%- if cfg['header'] %}
            filter(f.names, n -> not array_contains(array({{ _bronze_sql_list(known) }}), n)) as undeclared,
            case
                when not f.header_well_formed then 'malformed_header'
                when exists(f.names, n -> n is null or n = '') then 'malformed_header: a column without a name'
                when size(array_distinct(f.names)) < size(f.names) then 'duplicate_header'
                when exists(f.names, n -> not array_contains(array({{ _bronze_sql_list(known) }}), n)
                                          and not n rlike '^[a-z_][a-z0-9_]*$')
                    then concat('unexpected_header: ', array_join(filter(f.names,
                        n -> not array_contains(array({{ _bronze_sql_list(known) }}), n)
                             and not n rlike '^[a-z_][a-z0-9_]*$'), ', '),
                        ' is not a column name (a wrong delimiter? or a file without a header,'
                        ' AddColumnName=false: set header: false on the source)')
                {%- if not cfg['schema_evolution'] %}
                when size(filter(f.names, n -> not array_contains(array({{ _bronze_sql_list(known) }}), n))) > 0
                    then concat('unexpected_header: ', array_join(filter(f.names,
                        n -> not array_contains(array({{ _bronze_sql_list(known) }}), n)), ', '),
                        ' (the source does not allow schema evolution)')
                when size(filter(array({{ _bronze_sql_list(data_names) }}), c -> not array_contains(f.names, c))) > 0
                    then concat('missing_column: ', array_join(filter(array({{ _bronze_sql_list(data_names) }}),
                        c -> not array_contains(f.names, c)), ', '))
                {%- endif %}
            end as file_reason
            {%- else %}
            case
                {%- for phase in [0, 1] %}
                {%- set most = layouts[phase] | length %}
                {%- set least = most - (added_later | length) if cfg['schema_evolution'] else most %}
                when f.phase = {{ phase }} and (f.field_count > {{ most }} or f.field_count < {{ least }})
                    then concat('field_count: the file\'s rows have ', f.field_count, ' fields; the source declares ',
                                {{ most }}, ' (header: false: fields are read by position, so a file may lack'
                                ' only the last columns marked meta added_later, as files written before the'
                                ' source added them do; a column dropped at the source needs a header,'
                                ' AddColumnName=true)'
                                {%- set setting = 'full_load_op' if phase == 0 else 'cdc_op' %}
                                {%- set files = 'full-load' if phase == 0 else 'CDC' %},
                                {%- if cfg[setting] == 'included' %}
                                case when f.field_count = {{ most - 1 }} then {{ sql_string(
                                    "; if the " ~ files ~ " files have no Op ("
                                    ~ ("IncludeOpForFullLoad=false, DMS's default" if phase == 0
                                       else 'CdcInsertsOnly=true with IncludeOpForFullLoad=false')
                                    ~ "), set " ~ setting ~ ": absent on the source") }} else '' end,
                                {%- else %}
                                case when f.field_count = {{ most + 1 }} then {{ sql_string(
                                    "; if the " ~ files ~ " files have Op, set " ~ setting
                                    ~ ": included on the source") }} else '' end,
                                {%- endif %}
                                case when f.field_count = {{ most - 1 }} then {{ sql_string(
                                    "; a task without TimestampColumnName=" ~ cfg['timestamp_column']
                                    ~ " or without the transformation rule adding " ~ cfg['sequence_column']
                                    ~ " writes one field fewer: both are required") }} else '' end)
                {%- endfor %}
            end as file_reason
            {%- endif %}
        from named as f
    ),

    {#- each row with its file's facts, broadcast: every step from here is per row -#}
    data_rows as (
        select /*+ broadcast(f) */
            r.*,
            {{ _bronze_csv_well_formed('record') }} as well_formed,
            {{ _bronze_csv_fields('record') }} as fields,
            f.names,
            f.file_reason,
            {%- if cfg['header'] %}
            f.file_rows + case when f.file_reason is not null and coalesce(f.header, '') <> '' then 1 else 0 end
                as file_rows,
            {%- else %}
            f.file_rows,
            {%- endif %}
            {%- for name in known %}
            f.`_p_{{ loop.index }}`,
            {%- endfor %}
            {%- if cfg['header'] %}
            f.undeclared,
            {%- endif %}
            {#- a compressed file's size is not its text's: no byte check there -#}
            {#- Hadoop's line reader drops a UTF-8 byte-order mark (3 bytes) -#}
            {#- the lines are read more than once (split counts, lines; and,
                unless the records were written once, file facts and rows):
                a line beyond the split counts is a file that changed
                between the reads -#}
            case when r.beyond then 'unaccounted'
                 when f.file_name rlike '\\.gz$' then 'gz'
                 when f.file_bytes in (f.file_size + 1, f.file_size - 2) then 'no_final_newline'
                 when f.file_bytes in (f.file_size, f.file_size - 3) then 'ok'
                 else 'unaccounted' end as byte_check
        from ({{ records }}) as r
        join shaped as f
            on r.file = f.file
        where {{ is_data_row }}
        {%- if cfg['header'] %}
            or (r.record_no = 0 and r.record <> '' and f.file_reason is not null)
        {%- endif %}
    ),

    mapped as (
        select
            *,
            case
                when byte_check = 'unaccounted' then raise_error(concat(
                    'bronze {{ node.source_name }}.{{ node.name }}: the lines read from ', file,
                    ' do not add up to its size; refusing to read it partially'))
                when file_reason is not null then file_reason
                when cast(decode(cast(record as binary), 'UTF-8') as binary) <> cast(record as binary)
                    then 'malformed: invalid UTF-8'
                when contains(record, '\0') then 'malformed: NUL byte'
                when not complete then 'malformed: unclosed quote'
                when not well_formed then 'malformed: a quote inside an unquoted field, or text after a closing quote'
                when size(fields) <> size(names)
                    then concat('malformed: ', size(fields), ' fields, the file\'s columns are ', size(names))
            end as malformed,
            {%- for name in known %}
            {{ _bronze_csv_value('get(fields, `_p_' ~ loop.index ~ '`)', cfg) }} as `_f_{{ loop.index }}`{{ ',' if not loop.last }}
            {%- endfor %}
        from data_rows
    )

    select
        phase as _cdc_phase,
        {{ _bronze_op_expr(cfg, 'phase', '`_f_1`', '`_p_1` >= 0') }} as _cdc_op,
        `_f_2` as _cdc_commit_ts,
        `_f_3` as _cdc_change_seq,
        file as _cdc_file,
        file_modified_at as _cdc_file_modified_at,
        cast(record_no + {{ 0 if cfg['header'] else 1 }} as bigint) as _cdc_row,
        {%- for column in columns %}
        `_f_{{ loop.index + 3 }}` as `{{ column.name }}`,
        {%- endfor %}
        malformed as _cdc_malformed,
        record as _cdc_raw_line,
        {%- if cfg['header'] %}
        case
            when malformed is not null then null
            when size(undeclared) = 0 then cast(map() as map<string, string>)
            else map_from_entries(filter(arrays_zip(names, transform(fields, f -> {{ _bronze_csv_value('f', cfg) }})),
                                         e -> array_contains(undeclared, e.names)))
        end as _cdc_extra,
        {%- else %}
        cast(map() as map<string, string>) as _cdc_extra,
        {%- endif %}
        file_rows as _cdc_file_rows,
        case when byte_check = 'no_final_newline'
            then 'incomplete: the file does not end with a newline (cut mid-row?); held until it lands complete'
        end as _cdc_file_held
    from mapped
{% endmacro %}

{#- One CSV field: quoted, `""` inside quotes standing for `"`, or unquoted
    without `"` or `,` -#}
{% macro _bronze_csv_field_pattern() -%}
    (?:"(?:[^"]++|"")*+"|[^",]*+)
{%- endmacro %}

{#- Whether `record` is well formed: fields as above, separated by commas.
    A record without `"` is, and its fields are its commas' pieces: no
    regular expression for it. (`contains`, not `instr`: Spark's `instr`
    compares the text at every character, about 8 % of a 1M-row full
    load's batch statement in a profile of 2026-12-06.) -#}
{% macro _bronze_csv_well_formed(record) -%}
    (not contains({{ record }}, '"') or {{ record }} rlike '^{{ _bronze_csv_field_pattern() }}(?:,{{ _bronze_csv_field_pattern() }})*+$')
{%- endmacro %}

{#- The fields of `record`: as written, quotes included, or (with `cfg`)
    each made a value (_bronze_csv_value). A data row's fields stay as
    written and each value is made where it is used: a lambda over every
    field of every row runs without generated code (0.7 s of a 1M-row
    parse, measured 2026-11-28). -#}
{% macro _bronze_csv_fields(record, cfg=none) -%}
    {%- set written -%}
        case when not contains({{ record }}, '"') then split({{ record }}, ',', -1)
             else regexp_extract_all(concat(',', {{ record }}), ',({{ _bronze_csv_field_pattern() }})', 1) end
    {%- endset -%}
    {%- if cfg is none -%}
        {{ written }}
    {%- else -%}
        transform({{ written }}, f -> {{ _bronze_csv_value('f', cfg) }})
    {%- endif -%}
{%- endmacro %}

{#- A field as written made a value: "" is an empty string, an empty
    unquoted field or the null_value literal is NULL -#}
{% macro _bronze_csv_value(written, cfg) -%}
    case
        when {{ written }} like '"%' then replace(substr({{ written }}, 2, length({{ written }}) - 2), '""', '"')
        when {{ written }} = '' or {{ written }} = {{ sql_string(cfg['null_value']) }} then null
        else {{ written }}
    end
{%- endmacro %}

{#
    A CSV file's records: a file without a line of odd quote count (the usual
    case) has one record per line; in a file with one, a record ends at a line
    where the count of `"` so far is even.
#}
{% macro _bronze_csv_records(lines_table, predicate, phase_expr, large=false) %}
    {#- Which branch a line takes. Each branch reads the lines, joined to
        the per-block offsets (_bronze_numbered_lines), broadcast. `large`
        (a batch read with adaptive execution on, cdc_adaptive_min_bytes):
        the condition is on the offsets alone, so Spark filters each
        branch's broadcast, and a branch with no file (the multi-line one,
        usually) does not read the lines at all (an empty broadcast side of
        an inner join; a 1M-line file's records 3.3-3.7 s against 3.7-4.5,
        2026-12-04). Otherwise (a small batch) the condition
        names `line_no` too (never null), which Spark cannot push below the
        join: the branches share one broadcast, one Spark job less than
        two, and the second read of a few lines costs less than that job. -#}
    {%- set multiline = 'multiline' if large else 'coalesce(multiline, line_no is null)' %}
        select
            *,
            {{ phase_expr }} as phase,
            {#- the CR cut by bytes: Spark counts a cut multi-byte character
                and the CR after it as one character, which a cut by
                characters took away whole -#}
            case when complete and text like '%\r'
                 then cast(substr(cast(text as binary), 1, octet_length(text) - 1) as string)
                 else text end as record
        from (
            select
                file,
                line_no - 1 as record_no,
                file_name,
                file_modified_at,
                file_size,
                line_no > file_lines as beyond,
                true as complete,
                {{ _bronze_bom_stripped('line') }} as text
            from ({{ _bronze_numbered_lines(lines_table, predicate) }}) as numbered
            where not {{ multiline }}

            union all

            select
                file,
                record_no,
                max(file_name) as file_name,
                max(file_modified_at) as file_modified_at,
                max(file_size) as file_size,
                bool_or(line_no > file_lines) as beyond,
                bool_or(is_end) as complete,
                array_join(transform(array_sort(collect_list(named_struct('n', line_no, 't', text))),
                                     x -> x.t), '\n') as text
            from (
                select
                    *,
                    coalesce(sum(case when is_end then 1 else 0 end) over (
                        partition by file order by line_no
                        rows between unbounded preceding and 1 preceding), 0) as record_no
                from (
                    select
                        *,
                        {{ _bronze_bom_stripped('line') }} as text,
                        sum(octet_length(line) - octet_length(replace(line, '"', ''))) over (
                            partition by file order by line_no
                            rows between unbounded preceding and current row) % 2 = 0 as is_end
                    from ({{ _bronze_numbered_lines(lines_table, predicate) }}) as numbered
                    where {{ multiline }}
                ) as marked
            ) as grouped
            group by file, record_no
        ) as all_records
{%- endmacro %}

{#- _bronze_csv_records' columns and their types, in its order -#}
{% macro _bronze_csv_record_columns() %}
    {{ return(['file string', 'record_no bigint', 'file_name string', 'file_modified_at timestamp',
               'file_size bigint', 'beyond boolean', 'complete boolean', 'text string', 'phase int',
               'record string']) }}
{% endmacro %}

{#- header: false: the names of the source's last columns marked
    `meta: {added_later: true}` (added at the source after some files were
    written: those files lack them, and read them as NULL under
    schema_evolution). A file is read by position, so only a trailing run of
    columns can be missing; a marked column before an unmarked one is an
    error naming it. Any other file with fewer fields is refused
    (field_count): a column dropped at the source would shift the fields
    after it into the wrong columns. -#}
{% macro _bronze_added_later(node, columns) %}
    {%- set marked = [] -%}
    {%- for column in columns -%}
        {%- if (column.meta or {}).get('added_later') -%}
            {%- do marked.append(column.name | lower) -%}
        {%- elif marked -%}
            {%- do exceptions.raise_compiler_error('source ' ~ node.source_name ~ '.' ~ node.name ~ ': column '
                ~ marked[-1] ~ ' is marked added_later but ' ~ column.name ~ ' after it is not; with header: false '
                ~ 'only the last columns can be missing from older files (a column added at the source comes last)') -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(marked) }}
{% endmacro %}

{% macro _bronze_sql_list(values) -%}
    {%- for value in values -%}{{ sql_string(value) }}{{ ', ' if not loop.last }}{%- endfor -%}
{%- endmacro %}

{#
    Parquet as DMS writes it: typed columns (int32/int64, decimal, date,
    timestamp in micros or millis, boolean, string, binary), and a column's
    type may widen between files. Each file is read on its own, with its own
    schema (one DESCRIBE per file), and every value turned into the text
    silver casts from by its Parquet type (_bronze_parquet_text): decimals
    in full, never through a double; timestamps, with or without time zone,
    as yyyy-MM-dd HH:mm:ss.SSSSSS; binary as base64: declare such a column
    `string`; nested values as JSON. Columns are matched by name,
    case-insensitively, and a column a file lacks is NULL. A file that is
    not Parquet (no PAR1 magic at both ends: truncated, still being copied,
    or foreign) is not read: it becomes one
    quarantine entry (row 0) with the reason, and the other files go on.
    Row counts per file come from a separate count (Parquet answers it from
    the row groups' metadata), for the row-conservation check.
#}
{% macro _bronze_parquet_rows(node, cfg, listing, files) %}
    {%- set columns = bronze_file_columns(node) -%}
    {%- set names = bronze_header_columns(cfg) + (columns | map(attribute='name') | list) -%}
    {%- set corrupt = [] -%}
    {%- set readable = [] -%}
    {%- if files | length > 0 -%}
        {%- set literals = [] -%}
        {%- for file in files -%}{%- do literals.append(sql_string(file)) -%}{%- endfor -%}
        {#- the listing's `path` is the file's plain path, which a path-based
            read needs (`_metadata.file_path` is URL-encoded) -#}
        {%- set check -%}
            select
                _metadata.file_path,
                path,
                length < 12 or substr(content, 1, 4) <> cast('PAR1' as binary)
                    or substr(content, -4) <> cast('PAR1' as binary) as is_corrupt
            from {{ listing }}
            where _metadata.file_path in ({{ literals | join(', ') }})
        {%- endset -%}
        {%- for row in run_query(check).rows -%}
            {%- do (corrupt if row[2] else readable).append(row[0] if row[2] else row[1]) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set parts = [] -%}
    {%- for path in readable -%}
        {%- set relation = 'parquet.`' ~ (path | replace('`', '``')) ~ '`' -%}
        {%- set entries = [] -%}
        {%- for column in run_query('describe query select * from ' ~ relation).rows -%}
            {%- do entries.append(sql_string(column[0] | lower) ~ ', '
                                  ~ _bronze_parquet_text('`' ~ (column[0] | replace('`', '``')) ~ '`', column[1])) -%}
        {%- endfor -%}
        {%- set part -%}
            select
                _metadata.file_path as file,
                _metadata.file_name as file_name,
                _metadata.file_modification_time as file_modified_at,
                monotonically_increasing_id() as read_id,
                {%- if entries | length > 0 %}
                map({{ entries | join(', ') }}) as fields,
                {%- else %}
                cast(map() as map<string, string>) as fields,
                {%- endif %}
                cast(null as string) as malformed,
                (select count(*) from {{ relation }}) as file_rows
            from {{ relation }}
        {%- endset -%}
        {%- do parts.append(part) -%}
    {%- endfor -%}
    {%- for file in corrupt -%}
        {%- set part -%}
            select
                _metadata.file_path as file,
                _metadata.file_name as file_name,
                _metadata.file_modification_time as file_modified_at,
                cast(0 as bigint) as read_id,
                cast(map() as map<string, string>) as fields,
                concat('corrupt_file: not a Parquet file (no PAR1 magic at both ends; truncated or still '
                       'being written?), ', length, ' bytes') as malformed,
                cast(1 as bigint) as file_rows
            from {{ listing }}
            where _metadata.file_path = {{ sql_string(file) }}
        {%- endset -%}
        {%- do parts.append(part) -%}
    {%- endfor -%}
    {%- if parts | length == 0 -%}
        {%- do parts.append("select cast(null as string) as file, cast(null as string) as file_name, "
                            ~ "cast(null as timestamp) as file_modified_at, cast(0 as bigint) as read_id, "
                            ~ "cast(null as map<string, string>) as fields, cast(null as string) as malformed, "
                            ~ "cast(0 as bigint) as file_rows where false") -%}
    {%- endif -%}
    {%- set phase_expr = 'case when file_name rlike ' ~ sql_string(cfg['load_pattern']) ~ ' then 0 else 1 end' %}
    select
        {{ phase_expr }} as _cdc_phase,
        {{ _bronze_op_expr(cfg, phase_expr, "fields[" ~ sql_string(names[0] | lower) ~ "]",
                           "map_contains_key(fields, " ~ sql_string(names[0] | lower) ~ ")") }} as _cdc_op,
        fields[{{ sql_string(names[1] | lower) }}] as _cdc_commit_ts,
        fields[{{ sql_string(names[2] | lower) }}] as _cdc_change_seq,
        file as _cdc_file,
        file_modified_at as _cdc_file_modified_at,
        case when malformed is null then read_id - min(read_id) over (partition by file) + 1 else 0 end as _cdc_row,
        {%- for column in columns %}
        fields[{{ sql_string(column.name | lower) }}] as `{{ column.name }}`,
        {%- endfor %}
        malformed as _cdc_malformed,
        case when malformed is not null then concat('file ', file) end as _cdc_raw_line,
        map_filter(fields, (k, v) -> not array_contains(array({{ _bronze_sql_list(names | map('lower') | list) }}), k))
            as _cdc_extra,
        file_rows as _cdc_file_rows,
        cast(null as string) as _cdc_file_held
    from (
        {{ parts | join('
        union all
') }}
    ) as parquet_rows
{% endmacro %}

{#- One Parquet column's value as the text silver casts from, by the column's
    Spark type (as DESCRIBE prints it). A decimal's own text: Spark prints
    one below 1e-6 in exponent form (1E-18, 0E-18), written out here in
    full so the lossless check sees every digit. -#}
{% macro _bronze_parquet_text(column, data_type) %}
    {%- set t = data_type | lower -%}
    {%- if t == 'string' -%}
        {{ column }}
    {%- elif t.startswith('decimal') -%}
        case when cast({{ column }} as string) like '%E-%'
            then concat(case when {{ column }} < 0 then '-' else '' end, '0.',
                        repeat('0', cast(regexp_extract(cast({{ column }} as string), 'E-([0-9]+)$', 1) as int) - 1),
                        replace(regexp_extract(cast({{ column }} as string), '^-?([0-9.]+)E', 1), '.', ''))
            else cast({{ column }} as string) end
    {%- elif t in ('timestamp', 'timestamp_ntz') -%}
        date_format({{ column }}, 'yyyy-MM-dd HH:mm:ss.SSSSSS')
    {%- elif t == 'binary' -%}
        base64({{ column }})
    {%- elif t.startswith('struct') or t.startswith('array') or t.startswith('map') -%}
        to_json({{ column }})
    {%- else -%}
        cast({{ column }} as string)
    {%- endif -%}
{% endmacro %}

{#
    The lines of the files matching `predicate`, numbered in file order, with
    the file's name, landing time, size, its line count (`file_lines`) and
    whether any line has an odd number of `"` (`multiline`: a quoted value may
    span lines). Numbered without a window over the file:
    a split (one block of one file) is read whole, in order, by one task, so
    its rows get consecutive ids; a small aggregate per split gives the lines
    of the splits before it, broadcast back. Every step runs on every core.
#}
{% macro _bronze_numbered_lines(lines_table, predicate) %}
        select /*+ broadcast(o) */
            l.*,
            o.lines_before + l.read_id - o.first_id + 1 as line_no,
            o.file_lines,
            o.multiline
        from (
            {{ _bronze_raw_lines(lines_table, predicate) }}
        ) as l
        join (
            select
                file,
                block_start,
                first_id,
                coalesce(sum(lines) over (partition by file order by block_start
                                          rows between unbounded preceding and 1 preceding), 0) as lines_before,
                sum(lines) over (partition by file) as file_lines,
                bool_or(odd) over (partition by file) as multiline
            from (
                select
                    file,
                    block_start,
                    count(*) as lines,
                    min(read_id) as first_id,
                    {#- most lines hold no `"`: counted only in those that do (a
                        replace per line cost 0.5 s of a 1M-line file's parse);
                        counted in bytes: Spark's character functions take a
                        cut multi-byte character and the `"` after it as one -#}
                    bool_or(contains(line, '"') and (octet_length(line) - octet_length(replace(line, '"', ''))) % 2 = 1) as odd
                from ({{ _bronze_raw_lines(lines_table, predicate) }}) as split_lines
                group by file, block_start
            ) as splits
        ) as o
            on l.file = o.file and l.block_start = o.block_start
{%- endmacro %}

{#- The first line without its byte-order mark, every other byte of it kept:
    a regular expression decodes the line and writes invalid UTF-8 back as
    U+FFFD, which changed the line's bytes (the byte count then failed the
    file, held it, or let the altered value through), and a substring by
    characters reads past a cut character at the line's end. -#}
{% macro _bronze_bom_stripped(line) -%}
    case when line_no = 1 and startswith({{ line }}, '\uFEFF') then cast(substr(cast({{ line }} as binary), 4) as string)
         else {{ line }} end
{%- endmacro %}

{% macro _bronze_raw_lines(lines_table, predicate) %}
            select
                _metadata.file_path as file,
                _metadata.file_name as file_name,
                _metadata.file_modification_time as file_modified_at,
                _metadata.file_size as file_size,
                _metadata.file_block_start as block_start,
                monotonically_increasing_id() as read_id,
                value as line
            from {{ lines_table }}
            where {{ predicate }}
{%- endmacro %}

{#
    Debezium JSON lines (ExtractNewRecordState), one change per line, parsed
    here from the raw lines so that a line that is not a JSON object keeps
    its text for quarantine. Lines that are not changes: blank lines and
    `null` (the tombstone Debezium writes after a delete, a null value) and
    schema-change events (_bronze_is_schema_event) are skipped and not
    counted as rows (the file log counts the last two:
    _cdc_count_skipped_events). Field names are matched without case; a field written
    twice (in one case or two) makes the line malformed. A file that does
    not end with a newline is held back, like CSV.
#}
{% macro _bronze_debezium_rows(node, cfg, lines_table, predicate) %}
    {%- set columns = bronze_file_columns(node) -%}
    {%- set phase_expr = 'case when file_name rlike ' ~ sql_string(cfg['load_pattern']) ~ ' then 0 else 1 end' -%}
    {%- set commit_expr = _bronze_epoch_text("fields[" ~ sql_string(cfg['timestamp_column'] | lower) ~ "]", 'millis') -%}
    {%- set known = (bronze_header_columns(cfg) + (columns | map(attribute='name') | list)) | map('lower') | list %}
    with numbered as (
        {{ _bronze_numbered_lines(lines_table, predicate) }}
    ),

    parsed as (
        select
            *,
            from_json(body, 'map<string, string>') as raw_fields,
            {{ _bronze_json_one_value('text') }} as one_value,
            {#- every name as written, a name written twice twice (the map keeps one) -#}
            json_object_keys(body) as field_names
        from (select *, {{ _bronze_change_json(cfg, 'text') }} as body
              {# (a file written with CRLF line ends: its lines end with a CR) #}
              from (select *, {{ _bronze_line_text('line') }} as text from numbered) as trimmed) as unwrapped
    ),

    {#- per file (a window over its lines, one exchange for both steps):
        its bytes, its first change line, then whether it holds tombstones
        no delete explains (_bronze_lone_tombstones) -#}
    per_file as (
        select
            *,
            sum(octet_length(line) + 1) over w_file as file_bytes,
            min(if(line_kind in ('change', 'delete', 'unread'), line_no, null)) over w_file as first_change_line
        from (select *, {{ _bronze_debezium_line_kind(cfg) }} as line_kind from parsed) as kinds
        window w_file as (partition by file)
    ),

    checked as (
        select *, {{ _bronze_lone_tombstones() }} as lone_tombstones
        from per_file
        window w_file as (partition by file)
    ),

    changes as (
        select
            *,
            {#- names are matched without case, as Spark's columns are: a field
                written twice, in one case or two, is malformed -#}
            filter(array_distinct(transform(field_names, k -> lower(k))),
                   n -> size(filter(field_names, k -> lower(k) = n)) > 1) as twice,
            {#- each number as written (_bronze_json_number_text), written once
                here for every field, declared or not; found in the line by its
                name as written, before names are lower-cased (a regular
                expression ignores case for ASCII letters only) -#}
            case when size(array_distinct(transform(field_names, k -> lower(k)))) = size(field_names)
                then transform_keys(transform_values(raw_fields,
                                                     (k, v) -> {{ _bronze_json_number_text('text', 'v', 'k') }}),
                                    (k, v) -> lower(k)) end as fields,
            count(*) over (partition by file) as file_rows
        from checked
        {# in the filter, which every reader of the view evaluates (a column
           one does not select is never computed) #}
        where case
            when lone_tombstones is not null then raise_error(concat(
                'bronze {{ node.source_name }}.{{ node.name }}: ', file, ' holds ', lone_tombstones,
                {{ sql_string(": more tombstones (null lines) after its first change than deletes. A tombstone "
                              ~ "carries no key (that is in the Kafka record's key), so each stands for a delete "
                              ~ "that cannot be applied: ExtractNewRecordState drops the delete events under "
                              ~ "delete.tombstone.handling.mode=tombstone, its default (or delete-to-tombstone; "
                              ~ "before Debezium 2.5, delete.handling.mode=none). Set it to rewrite (or "
                              ~ "rewrite-with-tombstone) and land the table again (a new snapshot). Nothing was "
                              ~ "applied.") }}))
            else line_kind in ('change', 'delete', 'unread')
        end
    )

    select
        {{ phase_expr }} as _cdc_phase,
        {{ _bronze_op_expr(cfg, phase_expr, "fields[" ~ sql_string(cfg['op_column'] | lower) ~ "]") }} as _cdc_op,
        {{ commit_expr }} as _cdc_commit_ts,
        fields[{{ sql_string(cfg['sequence_column'] | lower) }}] as _cdc_change_seq,
        file as _cdc_file,
        file_modified_at as _cdc_file_modified_at,
        line_no as _cdc_row,
        {%- for column in columns %}
        {{ _bronze_value_text(cfg, column, "fields[" ~ sql_string(column.name | lower) ~ "]") }} as `{{ column.name }}`,
        {%- endfor %}
        case
            when cast(decode(cast(line as binary), 'UTF-8') as binary) <> cast(line as binary)
                then 'malformed: invalid UTF-8'
            {#- the JSON readers stop after the first value: a second one on
                the line (two lines joined), or any text after it, would be lost -#}
            when not one_value and from_json(text, 'map<string, string>') is not null
                then 'malformed: not one JSON object (two lines joined, text after it, or a bare NaN)'
            when raw_fields is null or not one_value then 'malformed: not a JSON object'
            when not map_contains_key(raw_fields, {{ sql_string(cfg['op_column']) }})
                and map_contains_key(raw_fields, 'source')
                and (map_contains_key(raw_fields, 'after') or map_contains_key(raw_fields, 'before'))
                then {{ sql_string("malformed: a Debezium change event not flattened (before, after, source; no "
                                   ~ cfg['op_column'] ~ " field): the connector needs the ExtractNewRecordState "
                                   ~ "transform with add.fields=op,source.ts_ms,lsn (README, Debezium)") }}
            when size(twice) > 0 then concat('malformed: a field written twice (names compared without case): ',
                                             array_join(twice, ', '))
        end as _cdc_malformed,
        line as _cdc_raw_line,
        {#- the `__` fields are metadata Debezium's SMT adds (add.fields), not columns -#}
        map_filter(fields, (k, v) -> not startswith(k, '__') and not array_contains(
            array({{ _bronze_sql_list(known) }}), k)) as _cdc_extra,
        file_rows as _cdc_file_rows,
        case
            when file_name not rlike '\\.gz$' and file_bytes in (file_size + 1, file_size - 2)
                then 'incomplete: the file does not end with a newline (cut mid-line?); held until it lands complete'
            when file_name not rlike '\\.gz$' and file_bytes not in (file_size, file_size - 3) then raise_error(concat(
                'bronze {{ node.source_name }}.{{ node.name }}: the lines read from ', file,
                ' do not add up to its size; refusing to read it partially'))
        end as _cdc_file_held
    from changes
{% endmacro %}

{#- What a Debezium line is, by one rule: 'blank'; 'tombstone' (`null`)
    and 'event' (a schema change), skipped (_bronze_debezium_skipped) and
    counted apart; 'unread' (not one JSON object: quarantined as
    malformed); 'delete' (the operation field `d` or the deleted field
    `true`, names matched without case as bronze reads them: looked up as
    configured first, every field's name compared only when one of the two
    is missing; or a not-flattened event's `op` `d`, quarantined too, as
    _bronze_debezium_rows tells it); 'change'. -#}
{% macro _bronze_debezium_line_kind(cfg) -%}
    {%- set op = cfg['op_column'] -%}
    {%- set deleted = cfg['deleted_column'] -%}
    case
        when text = '' then 'blank'
        when {{ _bronze_debezium_skipped(cfg, 'one_value', 'body', 'raw_fields') }}
            then if(body <=> 'null', 'tombstone', 'event')
        when raw_fields is null or not one_value then 'unread'
        when coalesce(raw_fields[{{ sql_string(op) }}] = 'd' or raw_fields[{{ sql_string(deleted) }}] = 'true',
                      exists(map_entries(raw_fields), e -> lower(e.key) = {{ sql_string(op | lower) }} and e.value = 'd'
                                                           or lower(e.key) = {{ sql_string(deleted | lower) }}
                                                              and e.value = 'true'))
            or not map_contains_key(raw_fields, {{ sql_string(op) }}) and map_contains_key(raw_fields, 'source')
               and (map_contains_key(raw_fields, 'after') or map_contains_key(raw_fields, 'before'))
               and raw_fields['op'] = 'd'
            then 'delete'
        else 'change'
    end
{%- endmacro %}

{#- Per Debezium file (a window `w_file` over its lines, with their
    line_kind and the file's first_change_line), NULL, or the text
    '<n> tombstone line(s) and <m> delete event(s) or unread line(s)' when more tombstones
    follow the file's first change than it has deletes. Debezium writes a
    tombstone after each delete; ExtractNewRecordState keeps both under
    delete.tombstone.handling.mode=rewrite-with-tombstone, the delete alone
    under rewrite (the README's setting), and under its default, tombstone,
    drops the delete: the keyless tombstone is all that is left, and the
    delete would be lost. Tombstones before a file's first change are taken
    to follow deletes that ended the file before it (a sink's file
    boundary), and a line that cannot be read may be a delete. Known gap:
    a delete written as its tombstone alone before any change of its file
    (a sink writing one change per file) passes. -#}
{% macro _bronze_lone_tombstones() -%}
    case when count_if(line_kind = 'tombstone' and line_no > first_change_line) over w_file
              > count_if(line_kind in ('delete', 'unread')) over w_file
        then concat(count_if(line_kind = 'tombstone' and line_no > first_change_line) over w_file,
                    ' tombstone line(s) and ', count_if(line_kind in ('delete', 'unread')) over w_file,
                    ' delete event(s) or unread line(s)') end
{%- endmacro %}

{#- A Debezium line's text: trimmed, without a byte-order mark or the CR
    of a CRLF line end. -#}
{% macro _bronze_line_text(line) -%}
    trim(regexp_replace({{ line }}, '^\uFEFF|\r$', ''))
{%- endmacro %}

{#- A Debezium line's change as JSON (`text`: _bronze_line_text): the line,
    or the `payload` of a line written by Kafka Connect's JsonConverter with
    schemas.enable=true (`{"schema":...,"payload":...}`, no operation
    field beside them; 'null' for a null payload, a tombstone; NULL, so
    malformed, when the payload cannot be read). -#}
{% macro _bronze_change_json(cfg, text) -%}
    case
        when not startswith({{ text }}, '{"schema":')
            or get_json_object({{ text }}, {{ sql_string('$.' ~ cfg['op_column']) }}) is not null then {{ text }}
        when {{ text }} rlike '"payload"\\s*:\\s*null\\s*}$' then 'null'
        else get_json_object({{ text }}, '$.payload')
    end
{%- endmacro %}

{#- Whether a Debezium line is an event that is not a change, skipped and
    counted (cdc_file_log.events_skipped): a tombstone (`null`) or a
    schema-change event, alone on its line (`one_value`:
    _bronze_json_one_value of the line; a line holding more, two lines
    joined, is malformed, never skipped). `body`: the line's change
    (_bronze_change_json); `fields`: the body as a map. -#}
{% macro _bronze_debezium_skipped(cfg, one_value, body, fields) -%}
    (({{ body }} <=> 'null' or {{ _bronze_is_schema_event(cfg, fields) }}) and {{ one_value }})
{%- endmacro %}

{#- Whether `text` is one JSON value and nothing after it. Spark's JSON
    readers stop after the first value, and json_array_length at the first
    closing bracket: the text must be an array's one element (nothing but
    `]` after its first value) and the first of two (no `]` after it). -#}
{% macro _bronze_json_one_value(text) -%}
    (json_array_length(concat('[', {{ text }}, ']')) <=> 1 and json_array_length(concat('[', {{ text }}, ',0]')) <=> 2)
{%- endmacro %}

{#- True for a Debezium schema-change event (`fields`: the line's JSON as a
    map): a `ddl` or `tableChanges` field and no operation field. A change of
    a table with a column of that name carries its operation. -#}
{% macro _bronze_is_schema_event(cfg, fields) -%}
    coalesce((map_contains_key({{ fields }}, 'ddl') or map_contains_key({{ fields }}, 'tableChanges'))
             and not map_contains_key({{ fields }}, {{ sql_string(cfg['op_column']) }}), false)
{%- endmacro %}

{#- A JSON field's value as written. from_json reads a number with a
    fraction or an exponent as a double before it becomes text (12345678.12
    becomes 1.234567812E7, 0.123456789012345678 loses its last digits): for
    such a value the number is taken from the line itself, as the producer
    wrote it, when it is the same double (so the same field). A number in
    exponent form is taken so only when the double changed its value (1e2
    stays 100.0: silver's checks reject an exponent in a decimal column),
    whatever its size (1.23456789012345678E25 and E-25 are taken). -#}
{% macro _bronze_json_number_text(line, value, name) -%}
    {#- name: the field's name, a SQL expression -#}
    case when {{ value }} rlike '^-?[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]+)?$' and {{ value }} rlike '[.eE]' then
        coalesce(try_element_at(filter(
            regexp_extract_all({{ line }}, concat('(?i)"\\Q', {{ name }},
                                                  '\\E"\\s*:\\s*(-?[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\\s*[,}]'), 1),
            n -> cast(n as double) = cast({{ value }} as double)
                and (n not rlike '[eE]' or {{ _bronze_numbers_differ('n', value) }})),
            1), {{ value }})
        else {{ value }} end
{%- endmacro %}

{#- Whether two JSON numbers (`a`, `b`: SQL text matching
    -?digits[.digits][e[+-]digits]) differ in value, exactly at any size
    (a decimal type would overflow or round). Each is compared as its sign,
    its significant digits and the power of ten of the point before them:
    12.5, 1.25e1 and 125E-1 are all '125e2'; 0.0 and 0e9 are '0'. -#}
{% macro _bronze_numbers_differ(a, b) -%}
    size(array_distinct(transform(array({{ a }}, {{ b }}), num ->
        transform(array(concat(regexp_extract(num, '^-?([0-9]+)', 1), regexp_extract(num, '[.]([0-9]+)', 1))),
                  digits -> case when trim(both '0' from digits) = '' then '0' else concat(
                      if(num like '-%', '-', ''), trim(both '0' from digits), 'e',
                      length(regexp_extract(num, '^-?([0-9]+)', 1)) - length(regexp_extract(digits, '^0*', 0))
                          + if(num rlike '[eE]', try_cast(regexp_extract(num, '[eE]([+-]?[0-9]+)$', 1) as bigint), 0))
                  end)[0]))) > 1
{%- endmacro %}

{#- A column's value as text in the DMS form. Debezium writes timestamps as
    numbers since the epoch (timestamp(6): microseconds, or the source's
    meta.external timestamp_unit, or the column's meta timestamp_unit: a
    timestamp(0..3) column is in milliseconds under Debezium's default
    time.precision.mode; a column declared timestamp_ntz takes the number's
    time in UTC, as Debezium wrote a timestamp without time zone), dates as
    days since the epoch, and (decimal_handling: precise, Debezium's default
    decimal.handling.mode) decimals as base64 (_bronze_precise_decimal_text);
    a value that is not a number, or a number out of range (a cast to NULL),
    stays as written, so silver quarantines it rather than losing it. -#}
{% macro _bronze_value_text(cfg, column, name, line='text') %}
    {%- set data_type = (column.data_type or 'string') | lower -%}
    {%- set scale = decimal_scale(data_type) -%}
    {%- if cfg['format'] == 'debezium' and data_type in ('timestamp', 'timestamp_ltz', 'timestamp_ntz') -%}
        {%- set unit = (column.meta or {}).get('timestamp_unit', cfg['timestamp_unit']) -%}
        {%- if unit not in ('micros', 'millis') -%}
            {%- do exceptions.raise_compiler_error("column " ~ column.name ~ ": meta timestamp_unit is '" ~ unit
                ~ "'; set it to 'micros' (timestamp(4..6), MicroTimestamp) or 'millis' (timestamp(0..3), Timestamp)") -%}
        {%- endif -%}
        {{ _bronze_epoch_text(name, unit, wall_clock=data_type == 'timestamp_ntz') }}
    {%- elif cfg['format'] == 'debezium' and scale is not none and cfg.get('decimal_handling') == 'precise' -%}
        {{ _bronze_precise_decimal_text(name, scale, line, column.name) }}
    {%- elif cfg['format'] == 'debezium' and data_type == 'date' -%}
        case when {{ name }} rlike '^-?[0-9]+$'
            then coalesce(cast(date_add(date '1970-01-01', try_cast({{ name }} as int)) as string), {{ name }})
            else {{ name }} end
    {%- else -%}
        {{ name }}
    {%- endif -%}
{% endmacro %}

{#- A Debezium time as the text DMS writes, in the session's time zone: a
    number since the epoch in `unit`; or an ISO-8601 time with its offset
    (io.debezium.time.ZonedTimestamp, a timestamptz column), the same
    instant, when it has no more than microseconds (more digits stay as
    written, and silver quarantines them). `wall_clock` (a timestamp_ntz
    column): the number's time in UTC (a timestamp_ntz cast to text, which
    no session time zone moves), and an ISO-8601
    time with an offset stays as written (an instant is not a wall-clock
    time; silver quarantines it). -#}
{% macro _bronze_epoch_text(expr, unit, wall_clock=false) %}
    {#- a count of milliseconds beyond a count of microseconds' range (such as
        Debezium's value for PostgreSQL's infinity) fails timestamp_millis:
        it stays as written -#}
    {%- set number = 'try_cast(' ~ expr ~ ' as bigint)' -%}
    {%- set number = 'case when ' ~ number ~ ' between -9223372036854775 and 9223372036854775 then ' ~ number ~ ' end'
                     if unit == 'millis' else number %}
    {%- if wall_clock %}
    case when {{ expr }} rlike '^-?[0-9]+$'
        {#- (timestampadd takes an int: a count of microseconds overflows it) -#}
        then coalesce(cast(timestamp_ntz '1970-01-01 00:00:00' + make_dt_interval(0, 0, 0,
                               cast({{ number }} as decimal(20, 0)) / {{ 1000000 if unit == 'micros' else 1000 }})
                           as string), {{ expr }})
        else {{ expr }} end
    {%- else %}
    case when {{ expr }} rlike '^-?[0-9]+$'
        then coalesce(date_format(timestamp_{{ unit }}({{ number }}), 'yyyy-MM-dd HH:mm:ss.SSSSSS'),
                      {{ expr }})
        when {{ expr }} rlike '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6}0*)?(Z|[+-][0-9]{2}:[0-9]{2})$'
        then coalesce(date_format(try_cast({{ expr }} as timestamp), 'yyyy-MM-dd HH:mm:ss.SSSSSS'), {{ expr }})
        else {{ expr }} end
    {%- endif %}
{%- endmacro %}

{#- A Debezium decimal written under decimal.handling.mode=precise (the
    connector's default; the source's decimal_handling: precise) as the
    text DMS writes: the JSON string is the base64 of the unscaled value's
    bytes (two's complement, most significant first), and the value is that
    integer over 10^`scale`, the declared column's scale (which must be the
    source column's: the flattened change does not carry it). A value that
    is not a JSON string of base64 (a JSON number, which the map of fields
    holds as the same text as a string, is told apart in the `line` by its
    `field`; a decimal as text), or beyond 38 digits, becomes a text no
    number matches (silver quarantines the row, with the line as written);
    NULL stays NULL. Each value is bound once by a one-element transform:
    the expression is written once per column in the bronze view, whose
    text the embedded catalog keeps to 32,700 characters. -#}
{% macro _bronze_precise_decimal_text(expr, scale, line, field) %}
    {#- the unscaled value: -1 (a first byte of 0x80 or more, in hex '8' to
        'F') or 0, then each byte -#}
    transform(array({{ expr }}), v -> case
        when v rlike '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$'
            and {{ line }} rlike {{ sql_string('(?i)"\\Q' ~ field ~ '\\E"\\s*:\\s*"') }}
        then coalesce(transform(array(hex(unbase64(v))), h -> transform(array(aggregate(
                sequence(0, length(h) div 2 - 1), cast(if(h >= '8', -1, 0) as decimal(38, 0)),
                (acc, i) -> cast(try_add(try_multiply(acc, 256), cast(conv(substr(h, i * 2 + 1, 2), 16, 10) as int))
                                 as decimal(38, 0)))), u ->
            {%- if scale == 0 %} cast(u as string)
            {%- else %} transform(array(cast(abs(u) as string)), a -> transform(
                array(lpad(a, greatest(length(a), {{ scale + 1 }}), '0')), d ->
                concat(if(u < 0, '-', ''), substr(d, 1, length(d) - {{ scale }}), '.', right(d, {{ scale }})))[0])[0]
            {%- endif %})[0])[0],
            concat('base64 beyond decimal(38): ', v))
        else concat('not a base64 string (decimal_handling: precise): ', v) end)[0]
{%- endmacro %}
