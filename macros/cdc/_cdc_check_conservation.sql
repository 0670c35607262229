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
    bitmaps 1-3 s more; docs/benchmark.md).
#}
{% macro _cdc_check_conservation(schema, batch) %}
    {%- set query -%}
        select _cdc_file, sum(arrived) as arrived, max(in_file) as in_file,
            sum(distinct_rows) as distinct_rows
        from (
            select _cdc_file, count(*) as arrived, max(_cdc_file_rows) as in_file,
                bitmap_count(bitmap_construct_agg(bitmap_bit_position(_cdc_row))) as distinct_rows
            from {{ batch }}
            group by _cdc_file, bitmap_bucket_number(_cdc_row)
        ) as by_bucket
        group by _cdc_file
        having sum(arrived) <> max(in_file) or sum(distinct_rows) <> sum(arrived)
        limit 10
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {%- if rows | length > 0 -%}
        {%- set listed = [] -%}
        {%- for row in rows -%}
            {%- do listed.append(row[0] ~ ' (' ~ row[1] ~ ' of ' ~ row[2] ~ ' rows'
                                 ~ (', ' ~ row[3] ~ ' distinct' if row[3] != row[1] else '') ~ ')') -%}
        {%- endfor -%}
        {%- do _cdc_scratch_drop(schema, batch) -%}
        {%- do exceptions.raise_compiler_error(
            "model '" ~ model.name ~ "': the rows that reached the model differ from the rows in the files: "
            ~ listed | join('; ') ~ ". A CDC silver model must pass every change row through "
            ~ "(no WHERE, no join that drops or repeats rows); reject rows with cdc_operations or "
            ~ "cdc_delete_when instead. Nothing was applied.") -%}
    {%- endif -%}
{% endmacro %}
