{#
    A SQL predicate, true when the text `expr` casts to `data_type` without
    changing its value (the cast returning NULL is checked apart). Spark's
    casts round (`1.005` into decimal(10,2) is 1.01), drop a time of day
    going into a date, and accept forms DMS never writes; a value such a
    cast would change is a reject, never a silent change.

      integers   optional sign and digits only (range: the cast's NULL)
      decimal    no more fractional digits than the scale, except trailing
                 zeros (precision overflow: the cast's NULL); scale 0
                 (decimal(38,0), decimal(18), plain decimal; numeric and
                 dec spell the same type): zeros only after the point
      date       yyyy-MM-dd, or a midnight timestamp, years 0001-9999
      timestamp  yyyy-MM-dd HH:mm:ss with at most 6 fractional digits
                 (microseconds), years 0001-9999
      boolean    true/false, t/f, yes/no, y/n, 1/0 (any case)
      double, float
                 a decimal number, optionally with an exponent, that the
                 binary type holds without overflow (1e400 is not Infinity)
                 or underflow (1e-400 is not 0); or Infinity, Inf or NaN as
                 written. Rounding to the nearest binary value is what the
                 declared type means, and is not checked.
      string, varchar(n), char(n)
                 not checked (text stays text)
    Any other type fails the compilation, naming these: a cast this macro
    cannot check would change values silently.
#}
{% macro lossless_cast_check(expr, data_type) %}
    {%- set t = data_type | lower | replace(' ', '') -%}
    {%- set scale = decimal_scale(t) -%}
    {%- set decimal = scale is not none -%}
    {%- if t in ('tinyint', 'smallint', 'int', 'integer', 'bigint', 'long', 'short', 'byte') -%}
        {{ expr }} rlike '^[+-]?[0-9]+$'
    {%- elif decimal and scale == 0 -%}
        {{ expr }} rlike '^[+-]?([0-9]+(\\.0*)?|\\.0+)$'
    {%- elif decimal -%}
        {{ expr }} rlike '^[+-]?([0-9]+(\\.[0-9]{0,{{ scale }}}0*)?|\\.[0-9]{1,{{ scale }}}0*)$'
    {%- elif t == 'date' -%}
        {{ expr }} rlike '^[0-9]{4}-[0-9]{2}-[0-9]{2}( 00:00:00(\\.0{1,9})?)?$'
        and not startswith({{ expr }}, '0000-')
    {%- elif t in ('timestamp', 'timestamp_ntz', 'timestamp_ltz') -%}
        {{ expr }} rlike '^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?$'
        and not startswith({{ expr }}, '0000-')
    {%- elif t in ('double', 'float', 'real') -%}
        {%- set value = 'cast(' ~ expr ~ ' as ' ~ t ~ ')' -%}
        ({{ expr }} rlike '^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?$'
         and abs({{ value }}) < cast('Infinity' as {{ t }})
         and ({{ value }} <> 0 or regexp_extract({{ expr }}, '^[^eE]*', 0) not rlike '[1-9]')
         or lower({{ expr }}) rlike '^[+-]?(inf|infinity|nan)$')
    {%- elif t == 'boolean' -%}
        lower({{ expr }}) in ('true', 'false', 't', 'f', 'yes', 'no', 'y', 'n', '1', '0')
    {%- elif t == 'string' or modules.re.match('^(var)?char\\(\\d+\\)$', t) -%}
        true
    {%- else -%}
        {%- do exceptions.raise_compiler_error("lossless_cast_check: the type '" ~ data_type ~ "' (a column's "
            ~ "data_type, " ~ expr ~ ") is not one whose casts are checked, so its values could change "
            ~ "without a reject. Declare it as one of: tinyint, smallint, int, bigint, decimal(p,s), "
            ~ "double, float, date, timestamp, timestamp_ntz, boolean, string, varchar(n), char(n).") -%}
    {%- endif -%}
{% endmacro %}
