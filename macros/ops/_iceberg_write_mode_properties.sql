{#- The Iceberg properties of write mode `mode` (the value of the model's
    setting `setting`, named in the error): format version 2 and the
    merge, update and delete modes. Fails, naming the setting, on a mode
    Iceberg does not have. -#}
{% macro _iceberg_write_mode_properties(mode, setting) %}
    {%- if mode not in ('merge-on-read', 'copy-on-write') -%}
        {%- do exceptions.raise_compiler_error("model '" ~ model.name ~ "': " ~ setting ~ " is '" ~ mode
            ~ "'; set it to 'merge-on-read' or 'copy-on-write'.") -%}
    {%- endif -%}
    {{ return({'format-version': '2', 'write.merge.mode': mode, 'write.update.mode': mode,
               'write.delete.mode': mode}) }}
{% endmacro %}
