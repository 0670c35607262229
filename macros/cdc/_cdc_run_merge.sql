{#
    Run `statement`, a MERGE of `run`'s batch into a table by key (the
    model's table, _cdc_apply_batch; its kept changes, _cdc_keep_changes).
    `from_scratch`: its batch side is the batch's scratch files (not the
    changes filled from the log, _cdc_fill_from_log, whose own joins must
    keep their broadcasts). It joins the whole table when the batch has no
    key list (_cdc_keys_in), the run did not create the table and the
    tables are not too small to filter (run['small_tables']).

    A MERGE that may insert joins the table on the side Spark cannot
    broadcast, so without a filter on the table's own columns it shuffles
    every stored row. Without a key list (more keys than cdc_key_list_max,
    or keys no list can hold) it runs with Spark's runtime bloom filter:
    Spark builds a bloom filter of the batch's keys (one small job) and
    drops the table's rows whose key is not in it before the shuffle.
    Spark adds that filter only
      - to a join that shuffles both sides: so nothing is broadcast in this
        statement (a batch small enough to broadcast would make Spark skip
        the filter);
      - when the table side is at least
        spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold
        (10 GB by default): 0 in this statement;
      - when the batch side is a selective filter over a scan (the batch's
        scratch files filtered by outcome, or by _cdc_copy = 1) of at most
        spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold
        (10 MB by default; a larger batch shuffles the table as before).
    Both settings are reset after the statement; a MERGE that fails leaves
    them set for the rest of the invocation (as cdc_adaptive_min_bytes
    leaves adaptive execution off); a new dbt process starts without them,
    and run_dbt resets them before its next invocation in the same one.
#}
{% macro _cdc_run_merge(run, statement, from_scratch) %}
    {%- set whole_table = from_scratch and not run.get('key_list') and not run['initial']
                          and not run['small_tables'] -%}
    {%- set settings = {'spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold': '0',
                        'spark.sql.autoBroadcastJoinThreshold': '-1'} if whole_table else {} -%}
    {%- for name, value in settings.items() -%}
        {%- do run_query('set ' ~ name ~ '=' ~ value) -%}
    {%- endfor -%}
    {%- do run_query(statement) -%}
    {%- for name in settings -%}
        {%- do run_query('reset ' ~ name) -%}
    {%- endfor -%}
{% endmacro %}
