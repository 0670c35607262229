{#
    Snapshot strategy `hash_diff`: a new version when the hash of the
    tracked columns (`check_cols`, a list) changes; validity from the source
    change-timestamp column `updated_at`, never from the run time.

        {{ config(strategy='hash_diff', unique_key='customer_id',
                  updated_at='changed_at', check_cols=['first_name', ...]) }}

    Deletes: feed the snapshot a source that keeps deleted keys with an
    `is_deleted` flag and the delete time in `updated_at` (a soft-delete
    silver model), and track `is_deleted`: the delete then closes the current
    version at the delete's commit time and adds a deleted marker version.
    A change whose timestamp is not after the current version's start is not
    applied (a snapshot cannot split history; use a full-history dimension).
#}
{% macro snapshot_hash_diff_strategy(node, snapshotted_rel, current_rel, model_config, target_exists) %}
    {%- set unique_key = config.get('unique_key') -%}
    {%- set updated_at = config.get('updated_at') -%}
    {%- set tracked = config.get('check_cols') -%}
    {%- if not updated_at -%}
        {%- do exceptions.raise_compiler_error("snapshot '" ~ node.name ~ "': strategy 'hash_diff' needs "
            ~ "updated_at, the source column holding each row's change time.") -%}
    {%- endif -%}
    {%- if tracked is string or not tracked -%}
        {%- do exceptions.raise_compiler_error("snapshot '" ~ node.name ~ "': strategy 'hash_diff' needs "
            ~ "check_cols as a list of the tracked columns (not 'all').") -%}
    {%- endif -%}
    {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
    {%- set row_changed -%}
        ({{ hash_columns(tracked, snapshotted_rel) }} != {{ hash_columns(tracked, current_rel) }}
         and {{ snapshotted_rel }}.{{ columns.dbt_valid_from }} < {{ current_rel }}.{{ updated_at }})
    {%- endset -%}
    {%- set keys = [unique_key] if unique_key is string else unique_key -%}
    {%- set hard_deletes = adapter.get_hard_deletes_behavior(config) -%}
    {{ return({
        'unique_key': unique_key,
        'updated_at': updated_at,
        'row_changed': row_changed,
        'scd_id': hash_columns(keys + [updated_at]),
        'invalidate_hard_deletes': hard_deletes == 'invalidate',
        'hard_deletes': hard_deletes,
    }) }}
{% endmacro %}
