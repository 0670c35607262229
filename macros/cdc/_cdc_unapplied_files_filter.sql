{#
    A predicate over `_metadata` keeping only files this model has not applied.

    Files are identified by path and modification time (a file rewritten in
    place is read again). To keep both the listing check and the predicate
    small, only files that landed after (newest applied file - lookback) are
    considered: a file landing with an older modification time than that is
    not seen until a --full-refresh (see README, "How silver reads bronze").
#}
{% macro _cdc_unapplied_files_filter(cfg) %}
    {%- set log_relation = adapter.get_relation(database=none, schema=this.schema, identifier='cdc_file_log') -%}
    {%- if log_relation is none -%}{{ return(none) }}{%- endif -%}
    {%- set hours = cfg['file_lookback_hours'] if cfg is not none else 24 -%}
    {%- set query -%}
        with applied as (
            select file_path, file_modified_at
            from {{ log_relation }}
            where model_name = '{{ model.name }}'
        ),
        horizon as (
            select max(file_modified_at) - make_dt_interval(0, {{ hours }}) as since from applied
        )
        select
            cast((select since from horizon) as string) as since,
            concat(file_path, '@', cast(unix_micros(file_modified_at) as string)) as file_key
        from applied
        where file_modified_at >= (select since from horizon)
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {%- if rows | length == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set keys = rows | map(attribute=1) | list -%}
    {%- set predicate -%}
        _metadata.file_modification_time >= timestamp '{{ rows[0][0] }}'
        and concat(_metadata.file_path, '@', cast(unix_micros(_metadata.file_modification_time) as string))
            not in ('{{ keys | join("', '") }}')
    {%- endset -%}
    {{ return(predicate) }}
{% endmacro %}
