{#- The maintenance policy of one table: var maintenance.default, overridden
    by the layer's entry (schema suffix: silver, gold, ...), overridden by the
    model's meta.maintenance. -#}
{% macro _maintenance_policy(layer, node_meta) %}
    {%- set settings = var('maintenance', {}) -%}
    {%- set policy = {} -%}
    {%- do policy.update(settings.get('default', {})) -%}
    {%- do policy.update(settings.get(layer, {}) or {}) -%}
    {%- do policy.update((node_meta or {}).get('maintenance', {}) or {}) -%}
    {%- set required = ['min_small_files', 'small_file_mb', 'max_delete_file_ratio', 'min_manifests',
                        'time_travel_hours', 'retain_snapshots', 'orphan_age_hours'] -%}
    {%- for name in required if name not in policy -%}
        {%- do exceptions.raise_compiler_error("maintenance policy for layer '" ~ layer ~ "' has no '" ~ name
            ~ "': set it under vars.maintenance.default in dbt_project.yml") -%}
    {%- endfor -%}
    {%- if policy['orphan_age_hours'] < 24 -%}
        {%- do exceptions.raise_compiler_error("maintenance: orphan_age_hours is " ~ policy['orphan_age_hours']
            ~ " for layer '" ~ layer ~ "'; Iceberg refuses less than 24 (files of a running write would be taken as orphans)") -%}
    {%- endif -%}
    {{ return(policy) }}
{% endmacro %}
