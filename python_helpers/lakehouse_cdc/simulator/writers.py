"""Change-file writers: DMS CSV, DMS Parquet and flattened Debezium JSON.

Every writer streams `Record`s to one file and returns the number of data rows
on `close()`. Output depends only on the records, so files are reproducible
byte for byte.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lakehouse_cdc.simulator.schema import (
    BIGINT,
    DECIMAL,
    INT,
    META_COLUMNS,
    SOURCE_SCHEMA,
    TABLES,
    TIMESTAMP,
    Row,
    Table,
    change_seq,
    file_stamp,
    format_ts,
    json_value,
    row_texts,
    text_formatters,
)

FORMATS = ("csv", "parquet", "debezium")
SUFFIX = {"csv": ".csv", "parquet": ".parquet", "debezium": ".json"}
#: Top folder under the simulation directory, per format.
FORMAT_ROOT = {"csv": "dms", "parquet": "dms", "debezium": "debezium"}
PARQUET_ROW_GROUP_ROWS = 50_000
_DEBEZIUM_OP = {"I": "c", "U": "u", "D": "d"}


@dataclass(slots=True)
class Record:
    """One row of a change file.

    `op` is I/U/D (or a bad code for an injected malformed row); `commit_us` and
    `seq`/`lsn` are None for full-load rows' sequence and for rows whose
    sequence is missing on purpose; `override` puts raw text into one column
    (index into the table columns) to make a value unparseable.
    """

    op: str
    commit_us: int | None
    seq: str | None
    lsn: int | None
    row: Row
    snapshot: bool = False
    override: tuple[int, str] | None = None
    texts: list[str | None] | None = None  # row already rendered (all columns), optional
    encoded: str | None = None  # optional: the full-load columns as a CSV line, NULL empty


# --- CSV ------------------------------------------------------------------


def encode_field(value: str | None, null: str = "") -> str:
    """RFC 4180 field: quoted when it has a comma, quote, CR/LF, or is empty."""
    if value is None:
        return null
    if value == "":
        return '""'
    if '"' in value:
        return '"' + value.replace('"', '""') + '"'
    if "," in value or "\n" in value or "\r" in value:
        return '"' + value + '"'
    return value


def encode_line(values: list[str | None], null: str = "") -> str:
    """One CSV record (see `encode_field`), newline-terminated."""
    out = []
    for v in values:  # encode_field inlined: this is the hot loop of big runs
        if v is None:
            out.append(null)
        elif v == "":
            out.append('""')
        elif '"' in v:
            out.append('"' + v.replace('"', '""') + '"')
        elif "," in v or "\n" in v or "\r" in v:
            out.append('"' + v + '"')
        else:
            out.append(v)
    return ",".join(out) + "\n"


def null_text(csv_null: str) -> str:
    """`--csv-null` choice to the bytes written for NULL."""
    return "NULL" if csv_null == "NULL" else ""


class FileWriter:
    """Base: header columns and the record → text cells rendering."""

    def __init__(self, path: Path, table: Table, with_added: bool, with_op: bool) -> None:
        self.path = path
        self.table = table
        self.columns = table.all_columns if with_added else table.columns
        self.with_op = with_op
        self.formatters = text_formatters(self.columns)
        self.rows = 0
        self._last_ts: tuple[int, str] = (-1, "")
        path.parent.mkdir(parents=True, exist_ok=True)

    @property
    def header(self) -> list[str]:
        meta = list(META_COLUMNS) if self.with_op else list(META_COLUMNS[1:])
        return meta + [c.name for c in self.columns]

    def cells(self, rec: Record) -> list[str | None]:
        if rec.texts is not None:
            texts = rec.texts[: len(self.formatters)]
        else:
            texts = row_texts(self.formatters, rec.row)
        if rec.override is not None:
            texts[rec.override[0]] = rec.override[1]
        if rec.commit_us is None:
            ts = None
        elif rec.commit_us == self._last_ts[0]:
            ts = self._last_ts[1]
        else:
            ts = format_ts(rec.commit_us)
            self._last_ts = (rec.commit_us, ts)
        meta: list[str | None] = [rec.op, ts, rec.seq] if self.with_op else [ts, rec.seq]
        return meta + texts

    def write(self, rec: Record) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


class CsvWriter(FileWriter):
    def __init__(self, path: Path, table: Table, with_added: bool, with_op: bool,
                 csv_null: str = "empty", header: bool = True) -> None:
        super().__init__(path, table, with_added, with_op)
        self.null = null_text(csv_null)
        self._fh: TextIO = open(path, "w", encoding="utf-8", newline="",  # noqa: SIM115
                                buffering=1 << 20)
        if header:  # DMS AddColumnName=true; its default writes none
            self._fh.write(",".join(self.header) + "\n")
        self._meta: tuple[tuple[str | None, ...], str] = ((), "")

    def write(self, rec: Record) -> None:
        if rec.encoded is not None and not self.null and len(self.columns) == len(
                self.table.columns):
            ts = None if rec.commit_us is None else format_ts(rec.commit_us)
            meta = (rec.op, ts, rec.seq) if self.with_op else (ts, rec.seq)
            if meta != self._meta[0]:
                self._meta = (meta, encode_line(list(meta))[:-1] + ",")
            self._fh.write(self._meta[1] + rec.encoded)
        else:
            self._fh.write(encode_line(self.cells(rec), self.null))
        self.rows += 1

    def close(self) -> int:
        self._fh.close()
        return self.rows


class ParquetWriter(FileWriter):
    """All columns as nullable Parquet strings, fixed row groups, snappy."""

    def __init__(self, path: Path, table: Table, with_added: bool, with_op: bool) -> None:
        super().__init__(path, table, with_added, with_op)
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError("--format parquet needs pyarrow (pip install pyarrow)") from exc
        self._pa = pa
        self._schema = pa.schema([pa.field(n, pa.string(), nullable=True) for n in self.header])
        self._writer = pq.ParquetWriter(str(path), self._schema, compression="snappy")
        self._buffer: list[list[str | None]] = [[] for _ in self.header]

    def write(self, rec: Record) -> None:
        for column, value in zip(self._buffer, self.cells(rec), strict=True):
            column.append(value)
        self.rows += 1
        if len(self._buffer[0]) >= PARQUET_ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer[0]:
            return
        arrays = [self._pa.array(col, type=self._pa.string()) for col in self._buffer]
        table = self._pa.Table.from_arrays(arrays, schema=self._schema)
        self._writer.write_table(table, row_group_size=PARQUET_ROW_GROUP_ROWS)
        self._buffer = [[] for _ in self.header]

    def close(self) -> int:
        self._flush()
        self._writer.close()
        return self.rows


class DebeziumWriter(FileWriter):
    """ExtractNewRecordState-flattened rows, one JSON object per line."""

    def __init__(self, path: Path, table: Table, with_added: bool) -> None:
        super().__init__(path, table, with_added, with_op=True)
        self._fh: TextIO = open(path, "w", encoding="utf-8", newline="",  # noqa: SIM115
                                buffering=1 << 20)

    def write(self, rec: Record) -> None:
        obj: dict[str, Any] = {
            c.name: json_value(c.type, v) for c, v in zip(self.columns, rec.row, strict=False)
        }
        if rec.override is not None:
            obj[self.columns[rec.override[0]].name] = rec.override[1]
        op = "r" if rec.snapshot else _DEBEZIUM_OP.get(rec.op, rec.op.lower())
        obj["__op"] = op
        obj["__source_ts_ms"] = None if rec.commit_us is None else rec.commit_us // 1000
        obj["__lsn"] = rec.lsn
        obj["__deleted"] = "true" if rec.op == "D" else "false"
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.rows += 1

    def close(self) -> int:
        self._fh.close()
        return self.rows


def open_writer(fmt: str, path: Path, table: Table, *, with_added: bool, with_op: bool = True,
                csv_null: str = "empty", csv_header: bool = True) -> FileWriter:
    """A writer for `fmt` (csv | parquet | debezium). Only CSV uses `csv_null`
    and `csv_header`; Debezium ignores `with_op` (its `__op` is always present
    and NULL is JSON null)."""
    if fmt == "csv":
        return CsvWriter(path, table, with_added, with_op, csv_null, csv_header)
    if fmt == "parquet":
        return ParquetWriter(path, table, with_added, with_op)
    if fmt == "debezium":
        return DebeziumWriter(path, table, with_added)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


# --- turning changes into files ---------------------------------------------

REJECT_REASONS = ("missing_key", "unknown_op", "unparseable_value", "missing_sequence")


@dataclass(frozen=True)
class Reject:
    """An injected malformed row: `row` is 1-based, header excluded."""

    file: str
    row: int
    table: str
    reason: str


@dataclass(frozen=True)
class FileEntry:
    """A written file; `kind` is load, cdc, late or redelivery."""

    batch: int
    table: str
    file: str
    rows: int
    kind: str


def malformed_candidates(table: str) -> list[int]:
    """Non-key columns of a type a reader must parse (number or timestamp)."""
    t = TABLES[table]
    return [i for i, c in enumerate(t.columns)
            if c.type in (BIGINT, INT, DECIMAL, TIMESTAMP) and c.name not in t.key]


def unparseable_text(col_type: str) -> str:
    return "2025-13-45 99:00:00" if col_type == TIMESTAMP else "abc"


class FileEmitter:
    """Writes LOAD and CDC files for one simulation directory and keeps the
    list of files, injected rejects and pending redeliveries.

    Rates: `dup_rate` is the chance that a row is written twice in its file and
    that a file is written again later; `malformed_rate` the chance that a row
    is followed by an injected bad row. When a rate is above zero the first
    CDC file gets one instance of each trap, so every trap shows up.
    """

    def __init__(self, out: Path, fmt: str, rng: random.Random,
                 next_counter: Callable[[], int], *, csv_null: str = "empty",
                 full_load_op: str = "I", load_file_rows: int = 100_000,
                 dup_rate: float = 0.0, malformed_rate: float = 0.0,
                 csv_header: bool = True) -> None:
        self.out = out
        self.csv_header = csv_header
        self.fmt = fmt
        self.rng = rng
        self.next_counter = next_counter
        self.csv_null = csv_null
        self.full_load_op = full_load_op
        self.load_file_rows = load_file_rows
        self.dup_rate = dup_rate
        self.malformed_rate = malformed_rate
        self.files: list[FileEntry] = []
        self.rejects: list[Reject] = []
        self.written_at: dict[str, int] = {}
        self.pending_redelivery: dict[int, list[FileEntry]] = {}
        self._force_dup = dup_rate > 0
        self._force_bad = malformed_rate > 0
        self._force_redelivery = dup_rate > 0

    def _rel(self, table: str, name: str) -> str:
        return f"{FORMAT_ROOT[self.fmt]}/{SOURCE_SCHEMA}/{table}/{name}"

    def _cdc_rel(self, table: str, write_us: int) -> tuple[str, int]:
        """A fresh CDC file name for the write time (bumped by 1 ms if taken)."""
        while True:
            rel = self._rel(table, file_stamp(write_us) + SUFFIX[self.fmt])
            if rel not in self.written_at:
                return rel, write_us
            write_us += 1000

    def _writer(self, rel: str, table: str, with_added: bool, with_op: bool) -> FileWriter:
        return open_writer(self.fmt, self.out / rel, TABLES[table], with_added=with_added,
                           with_op=with_op, csv_null=self.csv_null, csv_header=self.csv_header)

    # full load

    def write_load(self, table: str, records: Any) -> int:
        """Stream full-load records into LOAD00000001... files (hex counter)."""
        number, total = 0, 0
        writer: FileWriter | None = None
        with_op = self.full_load_op == "I"
        for rec in records:
            if writer is None:
                number += 1
                rel = self._rel(table, f"LOAD{number:08X}{SUFFIX[self.fmt]}")
                writer = self._writer(rel, table, with_added=False, with_op=with_op)
            writer.write(rec)
            total += 1
            if writer.rows >= self.load_file_rows:
                self._close_load(writer, table)
                writer = None
        if writer is not None:
            self._close_load(writer, table)
        return total

    def _close_load(self, writer: FileWriter, table: str) -> None:
        rows = writer.close()
        rel = writer.path.relative_to(self.out).as_posix()
        self.written_at[rel] = 0
        self.files.append(FileEntry(0, table, rel, rows, "load"))

    # change data capture

    def write_cdc(self, batch: int, table: str, records: list[Record], kind: str,
                  write_us: int, with_added: bool, redeliver_in: int) -> FileEntry:
        """One CDC file of `records` (in commit order) plus injected duplicate
        and malformed rows; may schedule its redelivery in batch `redeliver_in`."""
        rel, write_us = self._cdc_rel(table, write_us)
        rows = self._assemble(table, records)
        writer = self._writer(rel, table, with_added, with_op=True)
        for number, (rec, reason) in enumerate(rows, start=1):
            writer.write(rec)
            if reason is not None:
                self.rejects.append(Reject(rel, number, table, reason))
        entry = FileEntry(batch, table, rel, writer.close(), kind)
        self.files.append(entry)
        self.written_at[rel] = write_us
        if self._force_redelivery or self.rng.random() < self.dup_rate:
            self._force_redelivery = False
            self.pending_redelivery.setdefault(redeliver_in, []).append(entry)
        return entry

    def redeliver(self, batch: int, earliest_us: int, latest_us: int) -> list[FileEntry]:
        """Write again, under new names, the files scheduled for `batch`."""
        done = []
        for src in self.pending_redelivery.pop(batch, []):
            write_us = self.rng.randint(earliest_us, latest_us)
            rel, write_us = self._cdc_rel(src.table, write_us)
            (self.out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.out / src.file, self.out / rel)
            copied = [Reject(rel, r.row, r.table, r.reason)
                      for r in self.rejects if r.file == src.file]
            self.rejects.extend(copied)
            entry = FileEntry(batch, src.table, rel, src.rows, "redelivery")
            self.files.append(entry)
            self.written_at[rel] = write_us
            done.append(entry)
        return done

    def _assemble(self, table: str, records: list[Record]) -> list[tuple[Record, str | None]]:
        rng, n = self.rng, len(records)
        after: dict[int, list[tuple[Record, str | None]]] = {}
        if n == 0:
            return []
        for i, rec in enumerate(records):
            if rng.random() < self.dup_rate:
                after.setdefault(rng.randint(i, n - 1), []).append((rec, None))
            if rng.random() < self.malformed_rate:
                reason = rng.choice(REJECT_REASONS)
                bad = self._malformed(table, rec, reason)
                after.setdefault(rng.randint(i, n - 1), []).append((bad, reason))
        if self._force_dup:
            self._force_dup = False
            after.setdefault(0, []).insert(0, (records[0], None))
        if self._force_bad:
            self._force_bad = False
            for reason in REJECT_REASONS:
                i = rng.randrange(n)
                after.setdefault(i, []).append((self._malformed(table, records[i], reason),
                                                 reason))
        rows: list[tuple[Record, str | None]] = []
        for i, rec in enumerate(records):
            rows.append((rec, None))
            rows.extend(after.get(i, ()))
        return rows

    def _malformed(self, table: str, rec: Record, reason: str) -> Record:
        """A bad copy of `rec` with a sequence of its own (never a real one)."""
        assert rec.commit_us is not None
        counter = self.next_counter()
        seq = change_seq(rec.commit_us, counter)
        if reason == "missing_key":
            row = list(rec.row)
            row[self.rng.choice(TABLES[table].key_indexes)] = None
            return Record(rec.op, rec.commit_us, seq, counter, tuple(row))
        if reason == "unknown_op":
            return Record("X", rec.commit_us, seq, counter, rec.row)
        if reason == "unparseable_value":
            idx = self.rng.choice(malformed_candidates(table))
            text = unparseable_text(TABLES[table].columns[idx].type)
            return Record(rec.op, rec.commit_us, seq, counter, rec.row, override=(idx, text))
        return Record(rec.op, None, None, None, rec.row)
