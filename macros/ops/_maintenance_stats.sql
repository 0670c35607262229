{#- Files, bytes, snapshots and manifests of an Iceberg table's current state,
    from its metadata tables. -#}
{% macro _maintenance_stats(table, small_file_mb) %}
    {%- set query -%}
        select f.data_files, f.small_files, f.delete_files, f.bytes, s.snapshots, m.manifests
        from (
            select
                count_if(content = 0) as data_files,
                count_if(content = 0 and file_size_in_bytes < {{ small_file_mb }} * 1048576) as small_files,
                count_if(content <> 0) as delete_files,
                coalesce(sum(file_size_in_bytes), 0) as bytes
            from {{ table }}.files
        ) as f
        cross join (select count(*) as snapshots from {{ table }}.snapshots) as s
        cross join (select count(*) as manifests from {{ table }}.manifests) as m
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {{ return({'data_files': row[0], 'small_files': row[1], 'delete_files': row[2], 'bytes': row[3],
               'snapshots': row[4], 'manifests': row[5]}) }}
{% endmacro %}
