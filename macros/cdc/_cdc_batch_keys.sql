{#
    The keys of a batch as a list of SQL literals (run['key_list']), so that
    every statement that reads or changes the stored rows of those keys (the
    lookup of the stored rows, the tombstones, the MERGE, the kept changes)
    filters the table by them before it joins: Iceberg skips the data files
    whose key range holds none of them, and a MERGE shuffles the rows of the
    batch's keys, not the whole table (a MERGE that may insert joins the
    table on the side Spark cannot broadcast, so without a filter on the
    table's own columns it shuffles all of it).

    `ranked`: the ranked batch's scratch view (a large batch,
    _cdc_order_batch): the keys of its rows neither held nor rejected; or
    none (a small batch, ranked only in the statement that writes its
    outcomes): the distinct keys of the model's rows not held, read from
    its view without the ranking (0.25 s against 0.36 s for the ranked
    query, medians of six alternated 10-row runs, 2026-12-07), rejected
    rows' keys too. Either is a superset of the keys each of those
    statements touches: the newest usable change of each key. A list
    costs its length to plan, in every statement that carries it
    (measured on this project's machine: 20,000 keys about 0.5-1 s each),
    so it is kept short (cdc_key_list_max, 1,000 keys by
    default); without one, the MERGE into the table filters the table by a
    bloom filter of the batch's keys instead (_cdc_run_merge). No list at
    all (the statements join the whole table, as correct, only slower) when
    the batch has
      - more distinct keys than cdc_key_list_max;
      - a key no literal finds (_cdc_key_literal): a null key (a truncate
        kept as an event; in a small batch, a row rejected for its key
        too), a string key that is not UTF-8, a key of a type
        whose text does not convert back to the same value.
#}
{% macro _cdc_batch_keys(run, ranked) %}
    {%- set cfg = run['cfg'] -%}
    {%- set keys = cfg['keys'] -%}
    {%- set limit = cfg['key_list_max'] | int -%}
    {%- set types = {} -%}
    {%- for column in run['data_columns'] if column.name in keys -%}
        {%- do types.update({column.name: column.data_type | lower}) -%}
    {%- endfor -%}
    {%- set literals = [] -%}
    {%- set unusable = [] -%}
    {%- for key in keys -%}
        {%- set written = _cdc_key_literal('`' ~ key ~ '`', types.get(key)) -%}
        {%- do unusable.append(written['unusable']) -%}
        {%- if written['literal'] is not none -%}
            {%- do literals.append(written['literal']) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if limit <= 0 or literals | length < keys | length -%}
        {%- do run.update({'key_list': none}) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set literal = literals[0] if keys | length == 1
                      else "concat('(', " ~ literals | join(", ', ', ") ~ ", ')')" -%}
    {#- From the ranked batch, one row per key: the newest usable change
        of each (`_cdc_rank` 1), and the usable truncates, which carry no
        key. No distinct there, no aggregate: each would be a stage of its
        own, and the ranked batch has its keys distinct already. A small
        batch's rows repeat keys: distinct, a few rows. More rows than the
        limit: no list (a truncate that carried a key could repeat one;
        counting the rows never leaves a key out) -#}
    {%- set query -%}
        {%- if ranked is none %}
        select distinct {{ literal }} as key_literal, {{ unusable | join(' or ') }} as unusable
        from {{ run['source'] }}
        {%- if '_cdc_file_held' in run['names'] %}
        where _cdc_file_held is null
        {%- endif %}
        {%- else %}
        select {{ literal }} as key_literal, {{ unusable | join(' or ') }} as unusable
        from {{ ranked }}
        where _cdc_rank = 1 or (_cdc_reason is null and not _cdc_held and _cdc_is_truncate)
        {%- endif %}
        limit {{ limit + 1 }}
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {%- set usable = rows | selectattr(1) | list | length == 0 and 0 < rows | length <= limit -%}
    {%- do run.update({'key_types': types}) -%}
    {%- do run.update({'key_list': rows | map(attribute=0) | unique(case_sensitive=true) | join(', ')
                                   if usable else none}) -%}
{% endmacro %}

{#- `alias`'s keys are among the batch's (run['key_list']): a predicate on
    the table's own columns, or '' when there is no list -#}
{% macro _cdc_keys_in(run, alias) %}
    {%- if not run.get('key_list') -%}
        {{ return('') }}
    {%- endif -%}
    {%- set keys = run['cfg']['keys'] -%}
    {%- if keys | length == 1 -%}
        {#- a column and literals of different types are coerced to one -#}
        {%- set tuple = alias ~ '.`' ~ keys[0] ~ '`' -%}
    {%- else -%}
        {#- a tuple is compared as a struct, whose fields must have the same
            types on both sides: the table's columns as the batch's (Iceberg
            stores tinyint and smallint as int; a table not widened yet) -#}
        {%- set columns = [] -%}
        {%- for key in keys -%}
            {%- do columns.append('cast(' ~ alias ~ '.`' ~ key ~ '` as ' ~ run['key_types'][key] ~ ')') -%}
        {%- endfor -%}
        {%- set tuple = '(' ~ columns | join(', ') ~ ')' -%}
    {%- endif -%}
    {{ return(tuple ~ ' in (' ~ run['key_list'] ~ ')') }}
{% endmacro %}
