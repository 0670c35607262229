{#
    Table maintenance of every Iceberg table of the project (or of `select`:
    a list of layers and/or table names), each by its policy
    (_maintenance_policy):
      1. rewrite data files when enough are small or the delete files pass
         the ratio (position deletes are applied on the way);
      2. rewrite position delete files still left;
      3. rewrite manifests when there are many;
      4. expire snapshots older than the time-travel window, keeping at least N;
      5. remove orphan files (not referenced by any snapshot) older than the safe age.
    Files, bytes, snapshots and manifests before and after go to
    <ops>.maintenance_audit (one row per table and run) and to the log.
    The single entry point: `dbt run-operation lakehouse_maintain` and
    `lakehouse maintain` both call it. It holds the build lock
    (lakehouse_lock_acquire) while it works, so it never runs during a build
    on a shared catalog, nor a build during it; it takes the lock after every
    table's policy is read (a policy in error fails holding nothing).
    `lakehouse maintain` runs it under a holder of its own and releases the
    lock also when it fails: a failing run-operation runs no on-run-end hook.
#}
{% macro lakehouse_maintain(select=none, dry_run=false, run_id=none) %}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- set run_id = run_id or invocation_id -%}
    {%- set select = [select] if select is string else select -%}
    {%- set ops = lakehouse_ops_schema() -%}
    {%- do run_query('create database if not exists ' ~ ops) -%}
    {%- do run_query('create table if not exists ' ~ ops ~ '.maintenance_audit (
            run_id string, table_name string, layer string, started_at timestamp, finished_at timestamp,
            is_dry_run boolean, actions string,
            data_files_before bigint, data_files_after bigint, delete_files_before bigint, delete_files_after bigint,
            bytes_before bigint, bytes_after bigint, snapshots_before bigint, snapshots_after bigint,
            manifests_before bigint, manifests_after bigint, orphan_files_removed bigint) using iceberg') -%}
    {#- every table's policy before the lock is taken: a policy in error
        fails here, having changed nothing and holding no lock (a failing
        run-operation runs no on-run-end hook to release it) -#}
    {%- set tables = [] -%}
    {%- for relation, layer, meta in _maintenance_tables(select) -%}
        {%- do tables.append((relation, layer, _maintenance_policy(layer, meta))) -%}
    {%- endfor -%}
    {%- do lakehouse_lock_acquire('table maintenance' ~ (' (dry run)' if dry_run else '')) -%}
    {%- set now = run_query("select cast(current_timestamp() as string)").rows[0][0] -%}
    {%- set results = [] -%}
    {%- set values = [] -%}
    {%- for relation, layer, policy in tables -%}
        {%- set name = relation.schema ~ '.' ~ relation.identifier -%}
        {%- set call = 'call spark_catalog.system.' -%}
        {%- set before = _maintenance_stats(name, policy['small_file_mb']) -%}
        {%- set actions = [] -%}
        {%- set deletes_high = before['delete_files'] > 0 and before['delete_files']
                               >= policy['max_delete_file_ratio'] * [before['data_files'], 1] | max -%}
        {%- if before['small_files'] >= policy['min_small_files'] or deletes_high -%}
            {%- do actions.append('rewrite_data_files') -%}
            {%- if not dry_run -%}
                {%- do run_query(call ~ "rewrite_data_files(table => '" ~ name ~ "', options => map("
                    ~ "'min-input-files', '" ~ [policy['min_small_files'], 2] | max ~ "', "
                    ~ "'delete-file-threshold', '1', "
                    ~ "'min-file-size-bytes', '" ~ (policy['small_file_mb'] * 1048576) | int ~ "'))") -%}
            {%- endif -%}
        {%- endif -%}
        {%- set remaining = before['delete_files'] if dry_run else _maintenance_stats(name, policy['small_file_mb'])['delete_files'] -%}
        {%- if remaining > 0 and (deletes_high or 'rewrite_data_files' in actions) -%}
            {%- do actions.append('rewrite_position_delete_files') -%}
            {%- if not dry_run -%}
                {%- do run_query(call ~ "rewrite_position_delete_files(table => '" ~ name
                                 ~ "', options => map('rewrite-all', 'true'))") -%}
            {%- endif -%}
        {%- endif -%}
        {%- if before['manifests'] >= policy['min_manifests'] -%}
            {%- do actions.append('rewrite_manifests') -%}
            {%- if not dry_run -%}{%- do run_query(call ~ "rewrite_manifests(table => '" ~ name ~ "')") -%}{%- endif -%}
        {%- endif -%}
        {%- set expire_before = run_query("select cast(timestamp '" ~ now ~ "' - make_dt_interval(0, 0, 0, "
                                           ~ policy['time_travel_hours'] * 3600 ~ ") as string)").rows[0][0] -%}
        {%- set expirable = run_query('select count(*) from ' ~ name ~ ".snapshots where committed_at < timestamp '"
                                      ~ expire_before ~ "'").rows[0][0] -%}
        {%- if expirable > 0 and before['snapshots'] > policy['retain_snapshots'] -%}
            {%- do actions.append('expire_snapshots') -%}
            {%- if not dry_run -%}
                {%- do run_query(call ~ "expire_snapshots(table => '" ~ name ~ "', older_than => timestamp '"
                                 ~ expire_before ~ "', retain_last => " ~ policy['retain_snapshots'] ~ ")") -%}
            {%- endif -%}
        {%- endif -%}
        {%- set orphan_before = run_query("select cast(timestamp '" ~ now ~ "' - make_dt_interval(0, 0, 0, "
                                           ~ policy['orphan_age_hours'] * 3600 ~ ") as string)").rows[0][0] -%}
        {%- set orphans = run_query(call ~ "remove_orphan_files(table => '" ~ name ~ "', older_than => timestamp '"
                                    ~ orphan_before ~ "', dry_run => " ~ ('true' if dry_run else 'false') ~ ")").rows | length -%}
        {%- if orphans > 0 -%}{%- do actions.append('remove_orphan_files') -%}{%- endif -%}
        {%- set after = before if dry_run else _maintenance_stats(name, policy['small_file_mb']) -%}
        {%- set row = {'table': name, 'layer': layer, 'actions': actions | join(', ') or 'none',
                       'before': before, 'after': after, 'orphans': orphans} -%}
        {%- do results.append(row) -%}
        {%- do values.append("('" ~ run_id ~ "', '" ~ name ~ "', '"
            ~ layer ~ "', timestamp '" ~ now ~ "', current_timestamp(), " ~ ('true' if dry_run else 'false') ~ ", '"
            ~ row['actions'] ~ "', " ~ before['data_files'] ~ ", " ~ after['data_files'] ~ ", "
            ~ before['delete_files'] ~ ", " ~ after['delete_files'] ~ ", " ~ before['bytes'] ~ ", " ~ after['bytes'] ~ ", "
            ~ before['snapshots'] ~ ", " ~ after['snapshots'] ~ ", " ~ before['manifests'] ~ ", " ~ after['manifests'] ~ ", "
            ~ orphans ~ ")") -%}
        {%- do log('maintain ' ~ name ~ ': ' ~ row['actions'] ~ '; data files ' ~ before['data_files'] ~ ' -> '
                   ~ after['data_files'] ~ ', delete files ' ~ before['delete_files'] ~ ' -> ' ~ after['delete_files']
                   ~ ', snapshots ' ~ before['snapshots'] ~ ' -> ' ~ after['snapshots'], info=true) -%}
    {%- endfor -%}
    {%- if values -%}
        {%- do run_query('insert into ' ~ ops ~ '.maintenance_audit values ' ~ values | join(', ')) -%}
    {%- endif -%}
    {%- do lakehouse_lock_release() -%}
    {{ return(results) }}
{% endmacro %}
