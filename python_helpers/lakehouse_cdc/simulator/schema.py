"""Tables of the simulated operational database (source schema `retail`).

`TABLES` is the single description other code can build DDL from: per table
the key columns, the columns with their Spark SQL types in source order, and
the column added mid-stream (appended at the end) if any.

Values are held in memory in a compact internal form and rendered to text
here, the way AWS DMS writes them:

| type            | internal value             | text                          |
| --------------- | -------------------------- | ----------------------------- |
| `bigint`, `int` | `int`                      | decimal digits                |
| `string`        | `str`                      | as is                         |
| `timestamp`     | `int` microseconds (UTC)   | `yyyy-MM-dd HH:mm:ss.SSSSSS`  |
| `decimal(10,2)` | `int` hundredths (cents)   | two decimal places            |

`None` is NULL in every type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

SOURCE_SCHEMA = "retail"

BIGINT = "bigint"
INT = "int"
STRING = "string"
TIMESTAMP = "timestamp"
DECIMAL = "decimal(10,2)"

#: Columns DMS puts in front of the table columns, in file order.
OP_COLUMN = "Op"
COMMIT_TS_COLUMN = "dms_commit_ts"
CHANGE_SEQ_COLUMN = "AR_H_CHANGE_SEQ"
META_COLUMNS = (OP_COLUMN, COMMIT_TS_COLUMN, CHANGE_SEQ_COLUMN)

Value = int | str | None
Row = tuple[Value, ...]
Key = tuple[int, ...]


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class Table:
    """One source table. `columns` exist from the full load on; `added_column`
    (if any) is appended at the end from `--add-column-at-batch` on."""

    name: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    added_column: Column | None = None

    @property
    def all_columns(self) -> tuple[Column, ...]:
        """Every column the table can ever have, added column last."""
        extra = (self.added_column,) if self.added_column else ()
        return self.columns + extra

    def column_names(self, with_added: bool) -> list[str]:
        cols = self.all_columns if with_added else self.columns
        return [c.name for c in cols]

    @property
    def key_indexes(self) -> tuple[int, ...]:
        names = [c.name for c in self.columns]
        return tuple(names.index(k) for k in self.key)

    def key_of(self, row: Row) -> Key:
        return tuple(row[i] for i in self.key_indexes)  # type: ignore[misc]


def _table(name: str, key: tuple[str, ...], cols: str, added: Column | None = None) -> Table:
    columns = []
    for spec in cols.split(";"):
        col_name, col_type = spec.strip().split(" ", 1)
        columns.append(Column(col_name, col_type))
    return Table(name, key, tuple(columns), added)


TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        _table(
            "customer_master",
            ("customer_id",),
            "customer_id bigint; first_name string; last_name string; employer_name string;"
            " email_id string; row_audit_ts timestamp",
            added=Column("loyalty_tier", STRING),
        ),
        _table(
            "customer_address",
            ("customer_id",),
            "customer_id bigint; address_line string; city string; country string;"
            " row_audit_ts timestamp",
        ),
        _table(
            "product",
            ("product_id",),
            "product_id bigint; product_name string; category string;"
            f" unit_price {DECIMAL}; row_audit_ts timestamp",
        ),
        _table(
            "orders",
            ("order_id",),
            "order_id bigint; customer_id bigint; order_ts timestamp; status string;"
            " row_audit_ts timestamp",
        ),
        _table(
            "order_items",
            ("order_id", "line_no"),
            "order_id bigint; line_no int; product_id bigint; quantity int;"
            f" unit_price {DECIMAL}; row_audit_ts timestamp",
        ),
    )
}

ORDER_STATUSES = ("PLACED", "SHIPPED", "DELIVERED", "CANCELLED")


# --- text rendering -----------------------------------------------------------


@lru_cache(maxsize=8192)
def _day_text(days: int) -> str:
    return (date(1970, 1, 1) + timedelta(days=days)).isoformat()


def format_ts(micros: int) -> str:
    """Microseconds since the epoch (UTC) as `yyyy-MM-dd HH:mm:ss.SSSSSS`."""
    secs, frac = divmod(micros, 1_000_000)
    days, sod = divmod(secs, 86_400)
    hour, rest = divmod(sod, 3600)
    minute, sec = divmod(rest, 60)
    return f"{_day_text(days)} {hour:02d}:{minute:02d}:{sec:02d}.{frac:06d}"


def format_decimal(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole}.{frac:02d}"


def _fmt_str(value: Value) -> str:
    return value  # type: ignore[return-value]


def _fmt_int(value: Value) -> str:
    return str(value)


def _fmt_ts(value: Value) -> str:
    return format_ts(value)  # type: ignore[arg-type]


def _fmt_dec(value: Value) -> str:
    return format_decimal(value)  # type: ignore[arg-type]


_TEXT: dict[str, Callable[[Value], str]] = {
    BIGINT: _fmt_int,
    INT: _fmt_int,
    STRING: _fmt_str,
    TIMESTAMP: _fmt_ts,
    DECIMAL: _fmt_dec,
}


def text_formatters(columns: tuple[Column, ...]) -> list[Callable[[Value], str]]:
    return [_TEXT[c.type] for c in columns]


def row_texts(formatters: list[Callable[[Value], str]], row: Row) -> list[str | None]:
    """Render the first len(formatters) values of `row` as DMS text (None = NULL)."""
    return [None if v is None else f(v) for f, v in zip(formatters, row, strict=False)]


def json_value(col_type: str, value: Value) -> int | str | None:
    """Debezium JSON value: numbers and timestamps (micros) as numbers, decimals
    as strings."""
    if value is None:
        return None
    if col_type == DECIMAL:
        return format_decimal(value)  # type: ignore[arg-type]
    return value


def change_seq(commit_us: int, counter: int) -> str:
    """AR_H_CHANGE_SEQ: yyyyMMddHHmmss + hundredths (16 digits) + 19-digit counter."""
    t = format_ts(commit_us)
    return (t[0:4] + t[5:7] + t[8:10] + t[11:13] + t[14:16] + t[17:19] + t[20:22]
            + f"{counter:019d}")


def file_stamp(micros: int) -> str:
    """DMS CDC file base name for a write time: `YYYYMMDD-HHMMSSmmm`."""
    t = format_ts(micros)
    return t[0:4] + t[5:7] + t[8:10] + "-" + t[11:13] + t[14:16] + t[17:19] + t[20:23]
