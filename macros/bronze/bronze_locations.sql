{#
    Where each bronze source's files land and which of them are data files,
    as JSON: {source unique id: {"location": ..., "file_pattern": ...}}, for
    every source with `meta.external`. Read by `lakehouse follow`, which
    watches those folders; the values are bronze_external_config()'s, so the
    runner and the models agree on both.
#}
{% macro bronze_locations() %}
    {%- set found = {} -%}
    {%- for node in graph.sources.values() if bronze_is_external(node) -%}
        {%- set cfg = bronze_external_config(node) -%}
        {%- do found.update({node.unique_id: {'location': cfg['location'],
                                              'file_pattern': cfg['file_pattern']}}) -%}
    {%- endfor -%}
    {{ return(tojson(found)) }}
{% endmacro %}

{#- Whether a source table is read from files: it (or its source) has `meta.external` -#}
{% macro bronze_is_external(node) %}
    {{ return(true if ((node.meta or {}).get('external') or (node.source_meta or {}).get('external')) else false) }}
{% endmacro %}
