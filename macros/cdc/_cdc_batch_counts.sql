{#
    The counts of a CDC run's batch (scratch files with every row's
    outcome, _cdc_order_batch), by name:
      read, applied, superseded, quarantined  rows (held rows are neither
                                  read nor counted)
      files, held_files          files read, files held back as incomplete
      ignored_files              listed files that are not data files
      deletes, truncates         changes that delete a key, applied truncates
      same_seq                   keys whose newest change has the sequence of
                                 the row the table holds (a repeat, or a tie)
      undeclared                 columns the applied rows carry that the YAML
                                 does not declare (comma-separated)
      kept, kept_undeclared      rows neither held nor quarantined (what
                                 cdc_keep_changes keeps), and the undeclared
                                 columns they carry
    Fails, before anything is written, when read differs from applied +
    superseded + quarantined: a row would be lost.
#}
{% macro _cdc_batch_counts(run) %}
    {%- set totals -%}
        {#- per file first (a few rows), then the run: no distinct count
            over the batch, and the undeclared columns as a set per file #}
        select
            coalesce(sum(`read`), 0) as `read`,
            coalesce(sum(applied), 0) as applied,
            coalesce(sum(superseded), 0) as superseded,
            coalesce(sum(quarantined), 0) as quarantined,
            count_if(`read` > 0) as files,
            count_if(held > 0) as held_files,
            coalesce(sum(deletes), 0) as deletes,
            coalesce(sum(truncates), 0) as truncates,
            coalesce(sum(same_seq), 0) as same_seq,
            {{ '(select count(*) from ' ~ run['listed'] ~ ' where not is_data)' if run['listed'] else '0' }} as ignored_files,
            coalesce(array_join(array_sort(array_distinct(flatten(collect_list(undeclared)))), ','), '') as undeclared,
            coalesce(sum(kept), 0) as kept,
            coalesce(array_join(array_sort(array_distinct(flatten(collect_list(kept_undeclared)))), ','), '')
                as kept_undeclared
        from (
            select
                _cdc_file,
                count_if(not _cdc_held) as `read`,
                count_if(_cdc_held) as held,
                count_if(_cdc_outcome = 'applied') as applied,
                count_if(_cdc_outcome = 'superseded') as superseded,
                count_if(_cdc_outcome = 'quarantined') as quarantined,
                count_if(_cdc_rank = 1 and _cdc_is_delete) as deletes,
                count_if(_cdc_outcome = 'applied' and _cdc_is_truncate) as truncates,
                count_if(_cdc_same_seq) as same_seq,
                count_if({{ _cdc_kept() }}) as kept,
                {%- for name, rows in [('undeclared', "_cdc_outcome = 'applied'"),
                                       ('kept_undeclared', _cdc_kept())] %}
                {{ "flatten(collect_set(case when " ~ rows ~ " then map_keys(_cdc_extra) end))"
                   if '_cdc_extra' in run['names'] else 'cast(array() as array<string>)' }} as {{ name }}{{ ',' if not loop.last }}
                {%- endfor %}
            from {{ run['batch'] }}
            group by _cdc_file
        ) as per_file
    {%- endset -%}
    {%- set result = run_query(totals) -%}
    {%- set counts = {} -%}
    {%- for name in result.column_names -%}
        {%- do counts.update({name: result.rows[0][name]}) -%}
    {%- endfor -%}
    {%- if counts['read'] != counts['applied'] + counts['superseded'] + counts['quarantined'] -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': " ~ counts['read'] ~ " rows read, but "
            ~ counts['applied'] ~ " applied + " ~ counts['superseded'] ~ " superseded + " ~ counts['quarantined']
            ~ " quarantined: rows would be lost. Nothing was applied.") -%}
    {%- endif -%}
    {{ return(counts) }}
{% endmacro %}
