{#
    The counts of a CDC run's batch (scratch files with every row's
    outcome, _cdc_order_batch), by name, from one pass over the batch:
      read, applied, superseded, quarantined  rows (held rows are neither
                                  read nor counted)
      files, held_files          files read, files held back as incomplete
      ignored_files              listed files that are not data files
      deletes, truncates         applied changes that delete a key (each
                                 leaves a tombstone), applied truncates
      tombstoned                 those deletes of a key that has a tombstone
      same_seq                   keys whose newest change has the sequence of
                                 the row the table holds or of the key's
                                 tombstone (a repeat, or a tie)
      ties                       rows with the sequence of the row before
                                 them in their key and other content
      undeclared                 columns the applied rows carry that the YAML
                                 does not declare, and those of the changes
                                 soft deletes take values from
                                 (comma-separated)
      kept, kept_undeclared      rows neither held nor quarantined (what
                                 cdc_keep_changes keeps), and the undeclared
                                 columns they carry
      unavailable_undeclared     undeclared columns in which such a row
                                 carries Debezium's unchanged-TOAST
                                 placeholder (the run fails on them)
      placeholders               rows with a Debezium TOAST column not
                                 filled within the batch, or filled there
                                 (_cdc_fill_from_log may fill them from a
                                 change log)
      per_file                   the same per file (a list of dicts: file,
                                 file_modified_at in microseconds, arrived,
                                 in_file, distinct_rows, read, held, ...),
                                 which the file log is written from
    One query, per file (a few rows) and summed here: the row conservation
    check (_cdc_check_conservation), these counts and the file log used to
    read the batch three times (0.3-0.6 s of a 10-row run, 2026-11-26).
    Fails, before anything is written, on lost or invented rows, when read
    differs from applied + superseded + quarantined (a row would be lost),
    and on a Debezium TOAST placeholder in a column the YAML does not
    declare: only declared columns keep their stored value in its place
    (_cdc_fill_unavailable), an undeclared one would store the placeholder.
#}
{% macro _cdc_batch_counts(run) %}
    {%- set names = run['names'] -%}
    {%- set conserved = '_cdc_file_rows' in names -%}
    {%- set per_file_sql -%}
        {#- the distinct row numbers as bitmaps of 32,768 numbers each
            (_cdc_check_conservation): per file and bucket first #}
        select
            _cdc_file as file,
            max(modified) as file_modified_at,
            sum(arrived) as arrived,
            max(in_file) as in_file,
            sum(distinct_rows) as distinct_rows,
            {%- for name in ['read', 'held', 'applied', 'superseded', 'quarantined', 'deletes', 'tombstoned',
                             'truncates', 'same_seq', 'ties', 'kept', 'placeholders'] %}
            sum(`{{ name }}`) as `{{ name }}`,
            {%- endfor %}
            {%- for name in ['undeclared', 'kept_undeclared', 'unavailable_undeclared'] %}
            array_join(array_sort(array_distinct(flatten(collect_list({{ name }})))), ',') as {{ name }}{{ ',' if not loop.last }}
            {%- endfor %}
        from (
            select
                _cdc_file,
                unix_micros(max(_cdc_file_modified_at)) as modified,
                count(*) as arrived,
                {{ 'max(_cdc_file_rows)' if conserved else 'cast(null as bigint)' }} as in_file,
                {{ 'bitmap_count(bitmap_construct_agg(bitmap_bit_position(_cdc_row)))' if conserved else 'count(*)' }} as distinct_rows,
                count_if(not _cdc_held) as `read`,
                count_if(_cdc_held) as held,
                count_if(_cdc_outcome = 'applied') as applied,
                count_if(_cdc_outcome = 'superseded') as superseded,
                count_if(_cdc_outcome = 'quarantined') as quarantined,
                count_if(_cdc_outcome = 'applied' and _cdc_rank = 1 and _cdc_is_delete) as deletes,
                count_if(_cdc_outcome = 'applied' and _cdc_tombstoned) as tombstoned,
                count_if(_cdc_outcome = 'applied' and _cdc_is_truncate) as truncates,
                count_if(_cdc_same_seq) as same_seq,
                count_if(_cdc_tie) as ties,
                count_if({{ _cdc_kept() }}) as kept,
                {{ 'count_if(size(_cdc_unavailable) > 0 or size(_cdc_filled_from) > 0)' if run['toast'] else '0L' }} as placeholders,
                {#- (a soft delete adds those of the change it carries:
                    _cdc_soft_delete_values) -#}
                {%- set applied_extra = ('case when _cdc_carries then array_union('
                                         ~ 'coalesce(map_keys(_cdc_extra), cast(array() as array<string>)), '
                                         ~ 'coalesce(map_keys(_cdc_carry._cdc_extra), cast(array() as array<string>))) '
                                         ~ 'else map_keys(_cdc_extra) end')
                                        if run['carry'] else 'map_keys(_cdc_extra)' %}
                {#- (a soft delete resolved from the changes before it,
                    run['resolve'], takes those of the newest one that gave
                    values, a delete too on a key with no row: here those
                    of every change superseded in the batch by a newer one
                    of its key, as one at a time would add them; also one
                    older than the stored row, which one at a time would
                    not) -#}
                {%- set applied = "_cdc_outcome = 'applied'"
                                  ~ (" or (_cdc_outcome = 'superseded' and _cdc_rank > 1)"
                                     if run['resolve'] and run['soft'] else '') %}
                {%- set placeholders = "map_keys(map_filter(_cdc_extra, (k, v) -> v = "
                                       ~ sql_string(_cdc_unavailable_placeholder()) ~ "))" %}
                {%- for name, rows, extra in [('undeclared', '(' ~ applied ~ ')', applied_extra),
                                              ('kept_undeclared', _cdc_kept(), 'map_keys(_cdc_extra)'),
                                              ('unavailable_undeclared', _cdc_kept() if run['toast'] else 'false',
                                               placeholders)] %}
                {{ "flatten(collect_set(case when " ~ rows ~ " and size(" ~ extra ~ ") > 0 then " ~ extra ~ " end))"
                   if '_cdc_extra' in names else 'cast(array() as array<string>)' }} as {{ name }}{{ ',' if not loop.last }}
                {%- endfor %}
            from {{ run['batch'] }}
            group by _cdc_file{{ ', bitmap_bucket_number(_cdc_row)' if conserved }}
        ) as by_bucket
        group by _cdc_file
    {%- endset -%}
    {%- set result = run_query(per_file_sql) -%}
    {%- set per_file = [] -%}
    {%- for row in result.rows -%}
        {%- set stats = {} -%}
        {%- for name in result.column_names -%}{%- do stats.update({name: row[name]}) -%}{%- endfor -%}
        {%- do per_file.append(stats) -%}
    {%- endfor -%}
    {%- if conserved -%}
        {%- do _cdc_check_conservation(run, per_file) -%}
    {%- endif -%}
    {%- set counts = {'per_file': per_file} -%}
    {%- for name in ['read', 'applied', 'superseded', 'quarantined', 'deletes', 'tombstoned', 'truncates',
                     'same_seq', 'ties', 'kept', 'placeholders'] -%}
        {%- do counts.update({name: per_file | sum(attribute=name)}) -%}
    {%- endfor -%}
    {%- do counts.update({
        'files': per_file | selectattr('read', 'gt', 0) | list | length,
        'held_files': per_file | selectattr('held', 'gt', 0) | list | length,
        'ignored_files': _cdc_ignored_files(run),
    }) -%}
    {%- for name in ['undeclared', 'kept_undeclared', 'unavailable_undeclared'] -%}
        {%- set columns = [] -%}
        {%- for stats in per_file -%}
            {%- do columns.extend((stats[name] or '').split(',') | reject('equalto', '') | list) -%}
        {%- endfor -%}
        {%- do counts.update({name: columns | unique | sort | join(',')}) -%}
    {%- endfor -%}
    {%- if counts['read'] != counts['applied'] + counts['superseded'] + counts['quarantined'] -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': " ~ counts['read'] ~ " rows read, but "
            ~ counts['applied'] ~ " applied + " ~ counts['superseded'] ~ " superseded + " ~ counts['quarantined']
            ~ " quarantined: rows would be lost. Nothing was applied.") -%}
    {%- endif -%}
    {%- if counts['unavailable_undeclared'] -%}
        {%- set files = per_file | selectattr('unavailable_undeclared') | map(attribute='file') | list -%}
        {%- do _cdc_scratch_drop(run['schema'], run['batch']) -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': column(s) "
            ~ counts['unavailable_undeclared'] ~ " carry Debezium's " ~ _cdc_unavailable_placeholder()
            ~ " (an unchanged TOAST value, not a value) but are not declared in the source's YAML, "
            ~ "where only declared columns keep the stored value in its place: storing it would replace "
            ~ "the value. Declare them (name and data_type) under the source's columns and run again. "
            ~ "Files: " ~ files[:3] | join(', ') ~ ('...' if files | length > 3 else '')
            ~ ". Nothing was applied.") -%}
    {%- endif -%}
    {{ return(counts) }}
{% endmacro %}

{#- How many of the run's listed files are not data files: as the listing
    told cdc_changes (run['ignored_files'], no statement), else counted in
    the frozen list; 0 without one (a model that does not read through
    cdc_changes()). -#}
{% macro _cdc_ignored_files(run) %}
    {%- if not run['listed'] -%}
        {{ return(0) }}
    {%- elif run['ignored_files'] is not none -%}
        {{ return(run['ignored_files']) }}
    {%- endif -%}
    {{ return(run_query('select count(*) from ' ~ run['listed'] ~ ' where not is_data').rows[0][0]) }}
{% endmacro %}
