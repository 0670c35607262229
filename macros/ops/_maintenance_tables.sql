{#- The Iceberg tables of the project's layers (every schema <target>_<layer>
    except bronze, whose tables are external files): [(relation, layer, meta)].
    `select`: layers, table names (in any layer) or `schema.table` names.
    `meta` is the model's or snapshot's meta (empty for CDC bookkeeping tables). -#}
{% macro _maintenance_tables(select=none) %}
    {%- set metas = {} -%}
    {%- for node in graph.nodes.values() if node.resource_type in ('model', 'snapshot', 'seed') -%}
        {%- do metas.update({(node.schema ~ '.' ~ node.alias) | lower: node.config.meta or {}}) -%}
    {%- endfor -%}
    {%- set layers = ['silver', 'snapshots', 'dimensions', 'gold', 'seeds', 'ops'] -%}
    {%- set tables = [] -%}
    {%- for layer in layers -%}
        {%- set schema = target.schema ~ '_' ~ layer -%}
        {%- if adapter.check_schema_exists(database=none, schema=schema) -%}
            {%- for row in run_query('show tables in ' ~ schema).rows if not row[2] -%}
                {%- set relation = adapter.get_relation(database=none, schema=schema, identifier=row[1]) -%}
                {%- set wanted = select is none or layer in select or row[1] in select
                                  or (schema ~ '.' ~ row[1]) | lower in select -%}
                {%- if wanted and relation is not none and relation.type == 'table' and relation.is_iceberg -%}
                    {%- do tables.append((relation, layer, metas.get((schema ~ '.' ~ row[1]) | lower, {}))) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(tables) }}
{% endmacro %}
