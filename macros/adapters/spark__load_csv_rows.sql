{#
    Override of dbt-spark's seed load. The rows go in with one statement per
    batch of get_batch_size() rows (10,000 by default), the first an INSERT
    OVERWRITE: a table kept in place (spark__reset_csv_table) passes from
    its old rows to the new ones in one Iceberg commit when the seed fits in
    one batch (a larger seed shows a part of its rows between statements).

    Nothing is written when the table holds what this seed would write: the
    load marks the table with a digest of the seed's columns, their types
    and every value (`lakehouse.seed.digest`) and with the snapshot it made
    (`lakehouse.seed.snapshot`). A table whose current snapshot is another
    (a write outside dbt, a compaction) is loaded again.
#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {%- set columns = _seed_columns(model, agate_table) -%}
    {%- set digest = local_md5((columns, agate_table.rows | map('list') | list) | string) -%}
    {%- set marks = table_properties(this) -%}
    {%- if marks.get('lakehouse.seed.digest') == digest
           and marks.get('lakehouse.seed.snapshot') == current_snapshot_id(marks) -%}
        {{ return('-- ' ~ this.render() ~ ' holds these rows already (lakehouse.seed.digest ' ~ digest ~ ')') }}
    {%- endif -%}
    {%- set statements = [] -%}
    {%- for rows in agate_table.rows | batch(get_batch_size()) -%}
        {%- set values = [] -%}
        {%- set bindings = [] -%}
        {%- for row in rows -%}
            {%- set casts = [] -%}
            {%- for name, data_type in columns -%}
                {%- do casts.append('cast(' ~ get_binding_char() ~ ' as ' ~ data_type ~ ')') -%}
            {%- endfor -%}
            {%- do values.append('(' ~ casts | join(', ') ~ ')') -%}
            {%- do bindings.extend(row) -%}
        {%- endfor -%}
        {%- set sql = ('insert overwrite ' if loop.first else 'insert into ') ~ this.render()
                      ~ ' values\n' ~ values | join(',\n') -%}
        {%- do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) -%}
        {%- do statements.append(sql) -%}
    {%- endfor -%}
    {%- set snapshot = current_snapshot_id(table_properties(this)) -%}
    {%- call statement('mark_seed_table') -%}
        alter table {{ this.render() }} set tblproperties (
            'lakehouse.seed.digest' = '{{ digest }}', 'lakehouse.seed.snapshot' = '{{ snapshot }}')
    {%- endcall -%}
    {{ return(statements[0]) }}
{% endmacro %}
