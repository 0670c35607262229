"""Ground truth: writing it (from the simulator's own database) and reading it.

Layout under `<out>/truth/` (all CSV, header row, RFC 4180 quoting, NULL as an
empty unquoted field and the empty string as `""`, whatever `--csv-null` says):

- `<table>/final.csv`               live rows at the end, sorted by key
- `<table>/versions.csv`            batch, op, dms_commit_ts, AR_H_CHANGE_SEQ, columns...
- `<table>/state_after_batch_<k>.csv` live rows once batches 0..k have landed
- `rejects.csv`                     file, row, table, reason
- `files.csv`                       batch, table, file, rows, kind

File paths in `rejects.csv`, `files.csv` and `manifest.json` are relative to
the simulation directory (`dms/retail/<table>/<name>` or `debezium/...`).

The added column (customer_master.loyalty_tier), when it is added during the
run, is in `final.csv`, `versions.csv` (NULL for versions committed before it
existed) and in `state_after_batch_<k>.csv` for k >= the batch that added it,
mirroring the source table's columns at that point. Full-load versions have
batch 0, op I and an empty (NULL) AR_H_CHANGE_SEQ.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from lakehouse_cdc.simulator.schema import (
    BIGINT,
    DECIMAL,
    INT,
    TABLES,
    TIMESTAMP,
    Row,
    Table,
    format_ts,
    row_texts,
    text_formatters,
)
from lakehouse_cdc.simulator.writers import REJECT_REASONS, FileEntry, Reject, encode_line

TRUTH_DIR = "truth"
MANIFEST = "manifest.json"
VERSION_META = ("batch", "op", "dms_commit_ts", "AR_H_CHANGE_SEQ")
FILE_KINDS = ("load", "cdc", "late", "redelivery")

__all__ = [
    "FILE_KINDS", "MANIFEST", "REJECT_REASONS", "TRUTH_DIR", "VERSION_META", "FileEntry",
    "Reject", "TableTruth", "batch_files", "land_batch", "parse_csv", "parse_value",
    "read_csv", "read_files", "read_final", "read_manifest", "read_rejects",
    "read_state_after", "read_versions", "state_file_name", "write_files", "write_manifest",
    "write_rejects",
]


def state_file_name(batch: int) -> str:
    return f"state_after_batch_{batch}.csv"


def _open(path: Path) -> TextIO:
    path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "w", encoding="utf-8", newline="", buffering=1 << 20)  # noqa: SIM115


class TableTruth:
    """Truth files of one table.

    CDC versions arrive during the simulation (`add_version`, in commit order)
    and go to a side file; `write_keys` then streams every key once, in key
    order, with its full-load row and its state after each batch; `close`
    appends the CDC versions after the full-load ones.
    """

    def __init__(self, truth_dir: Path, table: Table, batches: int,
                 added_from: int | None) -> None:
        self.dir = truth_dir / table.name
        self.table = table
        self.batches = batches
        self.added_from = added_from
        self.columns = table.all_columns if added_from is not None else table.columns
        self._fmt = text_formatters(self.columns)
        self._cdc_path = self.dir / "versions.cdc.tmp"
        self._cdc = _open(self._cdc_path)
        self._versions: TextIO | None = None
        self._states: list[TextIO] = []
        self._final: TextIO | None = None
        self._n_base = len(table.columns)
        self._state_added = [self._with_added(k) for k in range(batches + 1)]

    def _with_added(self, batch: int) -> bool:
        return self.added_from is not None and batch >= self.added_from

    def render(self, row: Row) -> list[str | None]:
        """Text cells of every column this table's truth files may hold."""
        return row_texts(self._fmt, row)

    def _text(self, row: Row, with_added: bool, cells: list[str | None] | None = None) -> str:
        if cells is None:
            cells = row_texts(self._fmt, row)
        if not with_added:
            cells = cells[: self._n_base]
        return encode_line(cells)

    def add_version(self, batch: int, op: str, commit_us: int, seq: str, row: Row) -> None:
        prefix = encode_line([str(batch), op, format_ts(commit_us), seq])[:-1]
        self._cdc.write(prefix + "," + self._text(row, self.added_from is not None))

    def open_states(self) -> None:
        self._cdc.close()
        names = [c.name for c in self.columns]
        head = ",".join(VERSION_META) + "," + ",".join(names) + "\n"
        self._versions = _open(self.dir / "versions.csv")
        self._versions.write(head)
        self._final = _open(self.dir / "final.csv")
        self._final.write(",".join(names) + "\n")
        base_names = [c.name for c in self.table.columns]
        for k in range(self.batches + 1):
            fh = _open(self.dir / state_file_name(k))
            fh.write(",".join(names if self._with_added(k) else base_names) + "\n")
            self._states.append(fh)

    def write_key(self, load_row: Row | None, load_ts: str, states: list[Row | None],
                  load_cells: list[str | None] | None = None) -> str | None:
        """`states[k]` is the key's row after batch k (None: absent);
        `load_cells` optionally is `render(load_row)`. Returns, when at hand,
        the full-load row's table columns (no added column) as a CSV line."""
        assert self._versions is not None and self._final is not None
        full = self.added_from is not None
        if load_row is not None and all(row is load_row for row in states):
            return self._write_unchanged(load_row, load_ts, load_cells)
        cache: dict[int, tuple[Row, str]] = {}

        def text(row: Row, with_added: bool) -> str:
            hit = cache.get(with_added)
            if hit is None or hit[0] is not row:
                cells = load_cells if row is load_row else None
                hit = (row, self._text(row, with_added, cells))
                cache[with_added] = hit
            return hit[1]

        if load_row is not None:
            self._versions.write(f"0,I,{load_ts},," + text(load_row, full))
        for k, row in enumerate(states):
            if row is not None:
                self._states[k].write(text(row, self._with_added(k)))
        if states[-1] is not None:
            self._final.write(text(states[-1], full))
        return None

    def _write_unchanged(self, row: Row, load_ts: str, cells: list[str | None] | None) -> str:
        """Fast path: a full-load row no delivered change ever touched."""
        assert self._versions is not None and self._final is not None
        if cells is None:
            cells = row_texts(self._fmt, row)
        base = encode_line(cells[: self._n_base])
        full = encode_line(cells) if self.added_from is not None else base
        self._versions.write(f"0,I,{load_ts},," + full)
        for fh, with_added in zip(self._states, self._state_added, strict=True):
            fh.write(full if with_added else base)
        self._final.write(full)
        return base

    def close(self) -> None:
        assert self._versions is not None and self._final is not None
        with open(self._cdc_path, encoding="utf-8", newline="") as src:
            shutil.copyfileobj(src, self._versions, 1 << 20)
        self._cdc_path.unlink()
        for fh in [self._versions, self._final, *self._states]:
            fh.close()


def write_rejects(out: Path, rejects: list[Reject]) -> None:
    with _open(out / TRUTH_DIR / "rejects.csv") as fh:
        fh.write("file,row,table,reason\n")
        for r in rejects:
            fh.write(encode_line([r.file, str(r.row), r.table, r.reason]))


def write_files(out: Path, files: list[FileEntry]) -> None:
    with _open(out / TRUTH_DIR / "files.csv") as fh:
        fh.write("batch,table,file,rows,kind\n")
        for f in files:
            fh.write(encode_line([str(f.batch), f.table, f.file, str(f.rows), f.kind]))


def write_manifest(out: Path, knobs: dict[str, Any], batches: list[dict[str, Any]]) -> None:
    doc = {"source_schema": "retail", "knobs": knobs, "batches": batches}
    (out / MANIFEST).write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n",
                                encoding="utf-8")


# --- reading ------------------------------------------------------------------

_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_PLAIN = re.compile(r"[^,\n]*")


def parse_csv(text: str, null: str | None = None) -> Iterator[list[str | None]]:
    """RFC 4180 records keeping NULL (empty unquoted field, or `null` if given)
    apart from the empty string (`""`). A trailing `\\r` is not stripped."""
    pos, end = 0, len(text)
    while pos < end:
        record: list[str | None] = []
        while True:
            if pos < end and text[pos] == '"':
                m = _QUOTED.match(text, pos)
                if m is None:
                    raise ValueError(f"unterminated quoted field at offset {pos}")
                record.append(m.group(1).replace('""', '"'))
            else:
                m = _PLAIN.match(text, pos)
                assert m is not None
                raw = m.group(0)
                record.append(None if raw == "" or raw == null else raw)
            pos = m.end()
            if pos >= end or text[pos] == "\n":
                pos += 1
                break
            if text[pos] != ",":
                raise ValueError(f"unexpected {text[pos]!r} at offset {pos}")
            pos += 1
        yield record


def parse_value(col_type: str, text: str | None) -> Any:
    """Typed Python value of a truth-file text: int, Decimal, datetime (naive UTC)."""
    if text is None:
        return None
    if col_type in (BIGINT, INT):
        return int(text)
    if col_type == DECIMAL:
        return Decimal(text)
    if col_type == TIMESTAMP:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f")
    return text


def read_csv(path: Path, null: str | None = None) -> list[dict[str, str | None]]:
    """Rows of a CSV file with a header as dicts (None = NULL)."""
    records = parse_csv(path.read_text(encoding="utf-8"), null)
    header = next(records, None)
    if header is None:
        return []
    names = [h or "" for h in header]
    return [dict(zip(names, rec, strict=True)) for rec in records]


def _typed(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    types = {c.name: c.type for c in TABLES[table].all_columns}
    for row in rows:
        for name, text in row.items():
            if name in types:
                row[name] = parse_value(types[name], text)
            elif name == "batch":
                row[name] = int(text) if text is not None else None
    return rows


def read_final(sim_dir: Path, table: str, typed: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = read_csv(Path(sim_dir) / TRUTH_DIR / table / "final.csv")
    return _typed(table, rows) if typed else rows


def read_versions(sim_dir: Path, table: str, typed: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = read_csv(Path(sim_dir) / TRUTH_DIR / table / "versions.csv")
    return _typed(table, rows) if typed else rows


def read_state_after(sim_dir: Path, table: str, batch: int,
                     typed: bool = False) -> list[dict[str, Any]]:
    path = Path(sim_dir) / TRUTH_DIR / table / state_file_name(batch)
    rows: list[dict[str, Any]] = read_csv(path)
    return _typed(table, rows) if typed else rows


def read_rejects(sim_dir: Path) -> list[Reject]:
    rows = read_csv(Path(sim_dir) / TRUTH_DIR / "rejects.csv")
    return [Reject(str(r["file"]), int(str(r["row"])), str(r["table"]), str(r["reason"]))
            for r in rows]


def read_files(sim_dir: Path) -> list[FileEntry]:
    rows = read_csv(Path(sim_dir) / TRUTH_DIR / "files.csv")
    return [FileEntry(int(str(r["batch"])), str(r["table"]), str(r["file"]),
                      int(str(r["rows"])), str(r["kind"])) for r in rows]


def read_manifest(sim_dir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((Path(sim_dir) / MANIFEST).read_text(encoding="utf-8"))
    return doc


def batch_files(sim_dir: Path, batch: int) -> list[dict[str, Any]]:
    """Manifest entries (path, table, rows, kind) of one batch, in landing order."""
    for entry in read_manifest(sim_dir)["batches"]:
        if entry["batch"] == batch:
            files: list[dict[str, Any]] = entry["files"]
            return files
    raise KeyError(f"no batch {batch} in {sim_dir / MANIFEST}")


def land_batch(sim_dir: Path, landing_dir: Path, batch: int) -> list[Path]:
    """Copy the files of `batch` into `landing_dir/retail/<table>/<file>` (fresh
    mtimes, as a new arrival would have) and return the landed paths in order."""
    landed = []
    for entry in batch_files(sim_dir, batch):
        rel = Path(entry["path"])
        dest = Path(landing_dir).joinpath(*rel.parts[1:])
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(sim_dir) / rel, dest)
        landed.append(dest)
    return landed
