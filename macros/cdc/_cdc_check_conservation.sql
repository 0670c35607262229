{#
    Row conservation per file: the rows of each file that reached the batch
    must be exactly the data rows bronze counted in it before parsing any
    field (`_cdc_file_rows`), each once (its row number is unique in the
    file: a model that drops one row and repeats another keeps the count). A
    silver model that filters, joins away or repeats change rows would
    otherwise lose or invent changes silently; the run stops before anything
    is written and names the files. The distinct row numbers are counted
    with bitmaps of 32,768 numbers each: a `count(distinct)` would shuffle
    every row number with its file's path (at 10M rows, 2026-11-26, with
    another job on the machine: 11-29 s more than the row count alone; the
    bitmaps 1-3 s more; docs/benchmark.md). `per_file`: the batch's counts
    per file (_cdc_batch_counts: arrived, in_file, distinct_rows).
#}
{% macro _cdc_check_conservation(run, per_file) %}
    {%- set listed = [] -%}
    {%- for stats in per_file if stats['arrived'] != stats['in_file'] or stats['distinct_rows'] != stats['arrived'] -%}
        {%- if listed | length < 10 -%}
            {%- do listed.append(stats['file'] ~ ' (' ~ stats['arrived'] ~ ' of ' ~ stats['in_file'] ~ ' rows'
                                 ~ (', ' ~ stats['distinct_rows'] ~ ' distinct' if stats['distinct_rows'] != stats['arrived'] else '') ~ ')') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if listed | length > 0 -%}
        {%- do _cdc_scratch_drop(run['schema'], run['batch']) -%}
        {%- do exceptions.raise_compiler_error(
            "model '" ~ model.name ~ "': the rows that reached the model differ from the rows in the files: "
            ~ listed | join('; ') ~ ". A CDC silver model must pass every change row through "
            ~ "(no WHERE, no join that drops or repeats rows); reject rows with cdc_operations or "
            ~ "cdc_delete_when instead. Nothing was applied.") -%}
    {%- endif -%}
{% endmacro %}
