{#
    Whether this invocation takes the build lock. On by default for every
    target that is not an in-process Spark session (`method: session`: one
    process over embedded Derby, which cannot run two builds anyway, and
    whose crash tests kill dbt and rerun at once). Read-only commands never
    lock. Override with `--vars '{lakehouse_build_lock: true|false}'`.
#}
{% macro _lakehouse_lock_enabled() %}
    {%- if flags.WHICH in ['test', 'compile', 'docs', 'generate', 'show', 'list', 'ls', 'parse', 'debug'] -%}
        {{ return(false) }}
    {%- endif -%}
    {#- dbt does not always expose the profile's `method` to Jinja: the profile's
        in-process target is also known by its name -#}
    {{ return(var('lakehouse_build_lock', target.name != 'local' and target.get('method') != 'session')) }}
{% endmacro %}
