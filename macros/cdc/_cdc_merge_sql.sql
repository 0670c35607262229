{#
    The MERGE of the changes to apply (already the last per key and newer
    than what is stored) into the silver table; `unavailable`: the changes
    carry _cdc_keep_stored (columns to keep as stored: Debezium TOAST,
    _cdc_order_batch; partial updates, _cdc_partial_updates, whose changes
    also carry _cdc_deleted_at: `partial`, also for soft deletes resolved
    there). The sequence guard is repeated
    in the MERGE so that it holds even if the table changed between the
    selection of the changes and this statement. `empty_target`: the table
    was created empty by this run (first run, full refresh): a plain insert
    of the same rows. `keys_in`: a predicate on the table's columns true for
    every key of `changes` (_cdc_keys_in): the MERGE then reads and
    shuffles only the stored rows it can match. `carry`: soft mode, the
    changes carry _cdc_carry and _cdc_carries (_cdc_soft_delete_values).
#}
{% macro _cdc_merge_sql(target, changes, cfg, data_columns, target_columns, unavailable=false, undeclared=[],
                        empty_target=false, keys_in='', partial=false, carry=false) %}
    {%- set soft = cfg['delete_mode'] == 'soft' -%}
    {%- set keys = cfg['keys'] -%}
    {%- set seq = cfg['sequence_by'] -%}
    {%- set source_names = data_columns | map(attribute='name') | list -%}
    {%- set generated = cdc_column_names('generated') -%}
    {#- columns the table has but the model no longer selects: null from now on,
        or from _cdc_extra when the files still carry them (`undeclared`) -#}
    {%- set dropped = [] -%}
    {%- for name in target_columns if name not in source_names and name not in generated -%}
        {%- do dropped.append(name) -%}
    {%- endfor -%}
    {%- set bookkeeping = _cdc_change_bookkeeping(cfg) -%}
    {#- a soft delete's deleted_at: the change's own value (with partial
        updates the column itself holds the key's value after its changes) -#}
    {%- set deleted_at = 's._cdc_deleted_at' if partial and soft else 's.`' ~ cfg['deleted_at_column'] ~ '`' -%}
    {#- what a change writes to a column of a stored row -#}
    {%- set written = {} -%}
    {%- for name in source_names if name not in keys -%}
        {%- if unavailable and name not in bookkeeping -%}
            {#- a column the change did not carry (Debezium TOAST; an update's
                NULL or excluded column, _cdc_partial_updates) keeps its value -#}
            {%- do written.update({name: 'case when array_contains(s._cdc_keep_stored, ' ~ sql_string(name)
                                         ~ ') then t.`' ~ name ~ '` else s.`' ~ name ~ '` end'}) -%}
        {%- else -%}
            {%- do written.update({name: 's.`' ~ name ~ '`'}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set updates = [] -%}
    {%- for name, value in written.items() -%}
        {%- do updates.append('t.`' ~ name ~ '` = ' ~ value) -%}
    {%- endfor -%}
    {#- a column the files have but the YAML does not declare: from _cdc_extra -#}
    {%- set dropped_values = {} -%}
    {%- set extra_values = {} -%}
    {%- for name in dropped -%}
        {#- ({s}: the change whose value it is) -#}
        {%- do extra_values.update({name: '{s}._cdc_extra[' ~ sql_string(name | lower) ~ ']' if name | lower in undeclared else 'null'}) -%}
        {%- do dropped_values.update({name: extra_values[name] | replace('{s}', 's')}) -%}
        {%- do updates.append('t.`' ~ name ~ '` = ' ~ dropped_values[name]) -%}
    {%- endfor -%}
    {%- do updates.append('t._cdc_loaded_at = current_timestamp()') -%}
    {%- do updates.append("t._cdc_run_id = '" ~ invocation_id ~ "'") -%}
    {%- set insert_names = source_names + dropped + ['_cdc_loaded_at', '_cdc_run_id'] -%}
    {#- soft mode, `carry`: a delete with the values of the key's newest insert
        or update in the batch (_cdc_soft_delete_values), each as that
        change's update or insert would write it -#}
    {%- set carried = {} -%}
    {%- if carry -%}
        {%- for name in _cdc_carried_columns(cfg, data_columns) -%}
            {%- do carried.update({name: 's._cdc_carry.`' ~ name ~ '`'}) -%}
        {%- endfor -%}
        {%- for name in dropped -%}
            {%- do carried.update({name: extra_values[name] | replace('{s}', 's._cdc_carry')}) -%}
        {%- endfor -%}
    {%- endif -%}
    {#- soft mode, what a delete writes to a stored row besides its
        bookkeeping (_cdc_soft_delete_values): `carry`, the values of the
        key's newest insert or update, when newer than the row; `partial`,
        the values _cdc_partial_updates gave it (a column none was given
        keeps its value; the undeclared ones, when no change gave values) -#}
    {%- set delete_values = {} -%}
    {%- for name, value in carried.items() -%}
        {%- do delete_values.update({name: 'case when s._cdc_carries and s._cdc_carry._cdc_seq > ' ~ _cdc_seq_struct('t', seq)
                                           ~ ' then ' ~ value ~ ' else t.`' ~ name ~ '` end'}) -%}
    {%- endfor -%}
    {%- if partial and soft -%}
        {%- for name in _cdc_carried_columns(cfg, data_columns) -%}
            {%- do delete_values.update({name: written[name]}) -%}
        {%- endfor -%}
        {%- for name in dropped -%}
            {%- do delete_values.update({name: "case when array_contains(s._cdc_keep_stored, '_cdc_extra') then t.`"
                                               ~ name ~ '` else ' ~ dropped_values[name] ~ ' end'}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set insert_values = [] -%}
    {%- for name in source_names + dropped -%}
        {%- set own = dropped_values[name] if name in dropped else 's.`' ~ name ~ '`' -%}
        {%- do insert_values.append('case when s._cdc_carries then ' ~ carried[name] ~ ' else ' ~ own ~ ' end'
                                    if name in carried else own) -%}
    {%- endfor -%}
    {%- do insert_values.append('current_timestamp()') -%}
    {%- do insert_values.append("'" ~ invocation_id ~ "'") -%}
    {%- if soft -%}
        {%- do insert_names.extend(['is_deleted', 'deleted_at']) -%}
        {%- do insert_values.extend(['s._cdc_is_delete', 'case when s._cdc_is_delete then ' ~ deleted_at ~ ' end']) -%}
    {%- endif -%}
    {%- set insert_columns = insert_names | map('tojson') | join(', ') | replace('"', '`') -%}
    {%- if empty_target -%}
    {#- the table was created empty by this run: every change is an insert
        (the last per key; in hard mode not a delete), and an insert costs a
        fraction of a MERGE, which joins the batch with the table -#}
    insert into {{ target }} ({{ insert_columns }})
    select {{ insert_values | join(', ') }}
    from {{ changes }} as s
    {%- if not soft %}
    where not s._cdc_is_delete
    {%- endif %}
    {%- else %}
    merge into {{ target }} as t
    using {{ changes }} as s
    on {% for key in keys %}t.`{{ key }}` <=> s.`{{ key }}`{{ ' and ' if not loop.last }}{% endfor %}
    {%- if keys_in %}
        and {{ keys_in }}
    {%- endif %}
    {%- if soft %}
    when matched and s._cdc_is_delete and {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }} then update set
        {%- for name in bookkeeping %}
        t.`{{ name }}` = s.`{{ name }}`,
        {%- endfor %}
        {%- for name, value in delete_values.items() %}
        t.`{{ name }}` = {{ value }},
        {%- endfor %}
        t.is_deleted = true,
        t.deleted_at = {{ deleted_at }},
        t._cdc_loaded_at = current_timestamp(),
        t._cdc_run_id = '{{ invocation_id }}'
    when matched and {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }} then update set
        {{ updates | join(',\n        ') }},
        t.is_deleted = false,
        t.deleted_at = null
    when not matched then insert ({{ insert_columns }})
        values ({{ insert_values | join(', ') }})
    {%- else %}
    when matched and s._cdc_is_delete and {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }} then delete
    when matched and {{ _cdc_seq_struct('s', seq) }} > {{ _cdc_seq_struct('t', seq) }} then update set
        {{ updates | join(',\n        ') }}
    when not matched and not s._cdc_is_delete then insert ({{ insert_columns }})
        values ({{ insert_values | join(', ') }})
    {%- endif %}
    {%- endif %}
{% endmacro %}
