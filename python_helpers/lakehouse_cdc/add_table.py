"""`lakehouse add-table <landing-folder>`: a new source table from what landed.

Reads the files of one table folder (DMS CSV with a header row or with the
columns given, DMS Parquet, Debezium JSON lines with or without a schema
block), takes each column's type from a schema block (a Connect Decimal
with its precision and scale, read as Debezium's precise base64) or infers
it from the values, the key from the full-load rows (or takes `--key`),
and writes, without touching any other
file:

    models/bronze/<system>/_<system>__sources.yml   the source entry
    models/silver/<system>/slv_<system>__<table>.sql the silver model
    models/silver/<system>/_<system>__models.yml    its docs and tests

The two YAML files are per source system (the folder above the table
folder): a second table of the same system is appended to them. Review the
inferred types and the generated descriptions in the pull request.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lakehouse_cdc import PROJECT_ROOT

#: header columns DMS / Debezium add to every row (not columns of the table)
META_COLUMNS = {
    "csv": {"Op", "dms_commit_ts", "AR_H_CHANGE_SEQ"},
    "parquet": {"Op", "dms_commit_ts", "AR_H_CHANGE_SEQ"},
    "debezium": {"__op", "__source_ts_ms", "__lsn", "__deleted"},
}
NULL_TEXTS = {"", "NULL"}
#: Debezium / Kafka Connect schema types -> Spark types
CONNECT_TYPES = {
    "int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint",
    "float32": "float", "float64": "double", "boolean": "boolean", "string": "string",
    "io.debezium.time.Date": "date", "io.debezium.time.MicroTimestamp": "timestamp",
    "io.debezium.time.Timestamp": "timestamp", "org.apache.kafka.connect.data.Date": "date",
    "org.apache.kafka.connect.data.Timestamp": "timestamp",
}
#: a decimal under decimal.handling.mode=precise: base64 of the unscaled
#: number, its scale and precision in the field's parameters
CONNECT_DECIMAL = "org.apache.kafka.connect.data.Decimal"
SAMPLE_ROWS = 5000
#: full-load file names: the bronze sources' default `load_pattern`
#: (macros/bronze/bronze_external_config.sql), a parallel load's SEGMENTn_ too
FULL_LOAD_FILE = re.compile(r"^(SEGMENT[0-9]+_)?LOAD")


class AddTableError(ValueError):
    """What landed cannot be turned into a table; the message says what to pass."""


@dataclass
class Landed:
    """What the folder holds: format, columns in file order, sample values."""

    format: str
    columns: list[str]
    header: bool
    values: dict[str, list[str | None]] = field(default_factory=dict)
    full_load_values: dict[str, list[str | None]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # declared by a schema block
    #: a schema block's Connect Decimal fields: how their values are written
    #: (decimal_handling: precise for base64 strings, string for JSON numbers)
    decimal_handling: str | None = None
    notes: list[str] = field(default_factory=list)  # printed by the command
    full_load_op: str = "included"
    cdc_op: str = "included"

    def op_absent(self, full_load: bool) -> None:
        """A file of this kind has no Op (IncludeOpForFullLoad=false for a
        full-load file; CdcInsertsOnly for a CDC file)."""
        setattr(self, "full_load_op" if full_load else "cdc_op", "absent")


def _files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    if not files:
        raise AddTableError(f"{folder} holds no files: land the table's full-load (LOAD*) and "
                            "CDC files there first")
    return files


def _detect_format(files: list[Path]) -> str:
    suffixes = {p.suffix.lower() for p in files}
    if suffixes <= {".parquet"}:
        return "parquet"
    if suffixes <= {".json", ".jsonl"}:
        return "debezium"
    if suffixes <= {".csv"}:
        return "csv"
    raise AddTableError(f"cannot tell the format from the file names ({sorted(suffixes)}): "
                        "pass --format csv|parquet|debezium")


def _is_full_load(path: Path) -> bool:
    return FULL_LOAD_FILE.match(path.name) is not None


def _collect(rows: list[dict[str, Any]], columns: list[str], landed: Landed,
             full_load: bool) -> None:
    for row in rows[:SAMPLE_ROWS]:
        for column in columns:
            value = row.get(column)
            text = None if value is None else str(value)
            landed.values.setdefault(column, []).append(text)
            if full_load:
                landed.full_load_values.setdefault(column, []).append(text)


def _read_csv(files: list[Path], given: list[str] | None) -> Landed:
    meta = META_COLUMNS["csv"]
    landed = Landed("csv", [], header=given is None)
    for path in files:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
        if not rows:
            continue
        is_load = _is_full_load(path)
        if given is None:
            header, body = rows[0], rows[1:]
            if not landed.columns:
                landed.columns = [c for c in header if c not in meta]
            if header[0] != "Op":
                landed.op_absent(is_load)
            missing = [c for c in landed.columns if c not in header]
            if missing and header[-len(missing):] != missing:
                raise AddTableError(f"{path}: header {header} lacks {missing}")
        else:
            # no header row: Op (not in full-load files without it), the
            # timestamp, the sequence, then the given columns in file order
            body = rows
            landed.columns = given
            n_meta = len(body[0]) - len(given) if body else 3
            if n_meta not in (2, 3):
                raise AddTableError(
                    f"{path}: rows have {len(body[0])} fields, --columns names {len(given)}; "
                    "DMS writes 2 or 3 header fields (Op, timestamp, sequence) before them")
            # two header fields: no Op, or an Op and a file written before
            # the last column was added (its first field tells)
            older = n_meta == 2 and body[0][0] in ("I", "U", "D")
            if n_meta == 2 and not older:
                landed.op_absent(is_load)
            header = (["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ"] + given[:-1] if older
                      else ["Op", "dms_commit_ts", "AR_H_CHANGE_SEQ"][3 - n_meta:] + given)
        records = [dict(zip(header, row, strict=False)) for row in body]
        for record in records:
            for key, value in record.items():
                if value in NULL_TEXTS:
                    record[key] = None
        _collect(records, landed.columns, landed, is_load)
    return landed


def _read_parquet(files: list[Path]) -> Landed:
    import pyarrow.parquet as pq

    landed = Landed("parquet", [], header=False)
    for path in files:
        table = pq.read_table(path)
        if not landed.columns:
            landed.columns = [n for n in table.column_names if n not in META_COLUMNS["parquet"]]
        if "Op" not in table.column_names:
            landed.op_absent(_is_full_load(path))
        _collect(table.slice(0, SAMPLE_ROWS).to_pylist(), landed.columns, landed,
                 _is_full_load(path))
    return landed


def _read_debezium(files: list[Path]) -> Landed:
    landed = Landed("debezium", [], header=False)
    decimals: dict[str, set[str]] = {}  # Connect Decimal field -> JSON types of its values
    for path in files:
        records = []
        with open(path, encoding="utf-8-sig") as handle:
            for line in handle:
                if not line.strip():
                    continue
                record = json.loads(line)
                if isinstance(record, dict) and "payload" in record and "schema" in record:
                    for spec in (record["schema"] or {}).get("fields", []):
                        kind = spec.get("name") or spec.get("type")
                        if kind == CONNECT_DECIMAL:
                            landed.types.setdefault(spec["field"], _connect_decimal(spec, landed))
                            decimals.setdefault(spec["field"], set())
                        elif kind in CONNECT_TYPES:
                            landed.types.setdefault(spec["field"], CONNECT_TYPES[kind])
                    record = record["payload"]
                # not changes: a tombstone (null) and a schema-change event
                if not isinstance(record, dict) or (
                        ("ddl" in record or "tableChanges" in record) and "__op" not in record):
                    continue
                records.append(record)
                for name, kinds in decimals.items():
                    if record.get(name) is not None:
                        kinds.add("string" if isinstance(record[name], str) else "number")
        if records and not landed.columns:
            landed.columns = [k for k in records[0] if k not in META_COLUMNS["debezium"]]
        _collect(records, landed.columns, landed, _is_full_load(path))
    kinds = set().union(*decimals.values())
    if len(kinds) > 1:
        raise AddTableError(f"the Connect Decimal fields {', '.join(sorted(decimals))} hold both "
                            "base64 strings (decimal.handling.mode=precise) and JSON numbers "
                            "(the converter's decimal.format=NUMERIC): land one table's files "
                            "from one connector setting, or write its YAML by hand")
    if decimals:
        # base64 text is the unscaled number (precise); a JSON number is the
        # value as written, read as text (string)
        landed.decimal_handling = "string" if kinds == {"number"} else "precise"
    return landed


def _connect_decimal(spec: dict[str, Any], landed: Landed) -> str:
    """decimal(p,s) of a Connect Decimal field: its scale parameter, its
    precision (38, Spark's largest, when the connector does not give one or
    gives more: noted, as a larger value is then quarantined)."""
    parameters = spec.get("parameters") or {}
    name = spec["field"]
    try:
        scale = int(parameters.get("scale", 0))
        precision = int(parameters.get("connect.decimal.precision", 38))
    except ValueError as error:
        raise AddTableError(f"field {name}: the schema block's Decimal parameters {parameters} "
                            "are not numbers") from error
    if not 0 <= scale <= 38:
        raise AddTableError(f"field {name}: a Decimal of scale {scale}, which Spark's decimal "
                            "(scale 0 to 38) cannot hold; set decimal.handling.mode=string on the "
                            "connector and declare the column string")
    if precision > 38:
        landed.notes.append(f"{name}: decimal({precision},{scale}) at the source, declared "
                            f"decimal(38,{scale}) (Spark's largest): a value of more than "
                            f"{38 - scale} integer digits is quarantined")
    return f"decimal({max(min(precision, 38), scale)},{scale})"


_INT = re.compile(r"^-?\d{1,18}$")
_DECIMAL = re.compile(r"^-?(\d+)\.(\d+)$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,9})?$")


def infer_type(values: list[str | None]) -> str:
    """The narrowest Spark type every non-null value casts to (text: string)."""
    present = [v for v in values if v is not None]
    if not present:
        return "string"
    if all(v.lower() in ("true", "false") for v in present):
        return "boolean"
    if all(_INT.match(v) for v in present):
        return "bigint"
    if all(_INT.match(v) or _DECIMAL.match(v) for v in present):
        digits = [(len(m.group(1)), len(m.group(2))) for v in present if (m := _DECIMAL.match(v))]
        scale = max(s for _, s in digits)
        whole = max([w for w, _ in digits] + [len(v.lstrip("-")) for v in present
                                                if _INT.match(v)])
        return f"decimal({max(18, whole + scale)},{scale})"
    if all(_DATE.match(v) for v in present):
        return "date"
    if all(_TIMESTAMP.match(v) for v in present):
        return "timestamp"
    return "string"


def infer_key(landed: Landed) -> list[str]:
    """The first column, preferring `*_id` / `id`, whose full-load values are
    all present and distinct."""
    values = landed.full_load_values or landed.values
    candidates = [c for c in landed.columns
                  if values.get(c) and None not in values[c]
                  and len(set(values[c])) == len(values[c])]
    named = [c for c in candidates if c == "id" or c.endswith("_id")]
    if named or candidates:
        return [(named or candidates)[0]]
    raise AddTableError("no column is present and unique in every full-load row: pass the key "
                        "with --key (e.g. --key order_id,line_no)")


def read_landed(folder: Path, fmt: str | None = None,
                columns: list[str] | None = None) -> Landed:
    files = _files(folder)
    fmt = fmt or _detect_format(files)
    if fmt == "csv":
        return _read_csv(files, columns)
    landed = _read_parquet(files) if fmt == "parquet" else _read_debezium(files)
    if columns:
        unknown = [c for c in columns if c not in landed.columns]
        if unknown:
            raise AddTableError(f"--columns names {unknown}, which the {fmt} files do not have "
                                f"(they have {landed.columns})")
        landed.columns = columns
    return landed


def _sentence(column: str) -> str:
    return column.replace("_", " ").capitalize() + " (as the source writes it)."


def _source_names(project: Path) -> dict[str, Path]:
    """Source name -> the YAML file defining it."""
    found = {}
    for path in (project / "models").rglob("*.yml"):
        for source in (yaml.safe_load(path.read_text()) or {}).get("sources", []) or []:
            found[source["name"]] = path
    return found


def _load(path: Path, key: str) -> dict[str, Any]:
    if path.exists():
        return yaml.safe_load(path.read_text()) or {"version": 2, key: []}
    return {"version": 2, key: []}


def _dump(path: Path, data: dict[str, Any], comment: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)
    path.write_text(comment + text)


BRONZE_CDC = ["phase", "op", "commit_ts", "change_seq", "file", "file_modified_at", "row"]
SILVER_CDC = BRONZE_CDC + ["loaded_at", "run_id"]


@dataclass
class Written:
    source_yaml: Path
    model_sql: Path
    model_yaml: Path
    source: str
    model: str
    key: list[str]
    types: dict[str, str]
    notes: list[str] = field(default_factory=list)  # what to review beyond the types


def add_table(folder: Path | str, *, project_dir: Path | str = PROJECT_ROOT,
              system: str | None = None, table: str | None = None, key: list[str] | None = None,
              columns: list[str] | None = None, fmt: str | None = None,
              landing_root: Path | str | None = None, force: bool = False) -> Written:
    folder = Path(folder).resolve()
    project = Path(project_dir).resolve()
    if not folder.is_dir():
        raise AddTableError(f"{folder} is not a folder: give the folder one table's files land in, "
                            "e.g. .lakehouse/landing/pos/store")
    table = table or folder.name
    system = system or folder.parent.name
    for what, name in (("table", table), ("system", system)):
        if not re.match(r"^[a-z][a-z0-9_]*$", name):
            raise AddTableError(f"{what} name '{name}' is not snake_case: pass --{what} NAME")
    landed = read_landed(folder, fmt, columns)
    source = f"{'debezium' if landed.format == 'debezium' else 'dms'}_{system}"
    if not landed.columns:
        raise AddTableError(f"{folder}: no columns found in the files; pass --columns a,b,c")
    types = {c: landed.types.get(c) or infer_type(landed.values.get(c, []))
             for c in landed.columns}
    keys = key or infer_key(landed)
    unknown = [k for k in keys if k not in landed.columns]
    if unknown:
        raise AddTableError(f"--key {','.join(unknown)}: not a column of the table "
                            f"({', '.join(landed.columns)})")

    root = Path(landing_root or os.environ.get("LAKEHOUSE_LANDING")
                or Path(os.environ.get("LAKEHOUSE_HOME", PROJECT_ROOT / ".lakehouse")) / "landing")
    root = root.resolve()
    location = (str(folder.relative_to(root)) if folder.is_relative_to(root) else str(folder))

    source_yaml = project / "models" / "bronze" / system / f"_{system}__sources.yml"
    defined = _source_names(project)
    if source in defined and defined[source] != source_yaml:
        raise AddTableError(
            f"source '{source}' is defined in {defined[source].relative_to(project)}, which "
            f"add-table does not edit: add the table there by hand, or pass --system with "
            f"another name")
    sources = _load(source_yaml, "sources")
    entry = next((s for s in sources["sources"] if s["name"] == source), None)
    if entry is None:
        entry = {
            "name": source,
            "description": f"Change files of the `{system}` database ({landed.format}), landed "
                           f"under `<landing_root>/{Path(location).parent}/` when relative.",
            "schema": "{{ target.schema }}_bronze",
            "loaded_at_field": "_cdc_file_modified_at",
            "freshness": {"warn_after": {"count": 24, "period": "hour"},
                          "error_after": {"count": 72, "period": "hour"}},
            "meta": {"external": {"format": landed.format}},
            "tables": [],
        }
        sources["sources"].append(entry)
    if any(t["name"] == table for t in entry["tables"]) and not force:
        raise AddTableError(f"{source}.{table} already exists in {source_yaml}: pass --force "
                            "to write it again")
    external: dict[str, Any] = {"location": location, "header": landed.header}
    for setting in ("full_load_op", "cdc_op"):
        if getattr(landed, setting) == "absent":
            external[setting] = "absent"
    if landed.decimal_handling:
        external["decimal_handling"] = landed.decimal_handling
    elif landed.format == "debezium" and any(t.startswith("decimal") for t in types.values()):
        # the values read as decimal text: the connector writes them as text
        # (decimal.handling.mode=string) or numbers (double), not base64
        external["decimal_handling"] = "string"
    entry["tables"] = [t for t in entry["tables"] if t["name"] != table] + [{
        "name": table,
        "description": f"The `{table}` table of `{system}`, one row per "
                       f"{', '.join(keys)}; added by `lakehouse add-table`.",
        "meta": {"external": external},
        "columns": (
            [{"name": f"_cdc_{c}", "description": f'{{{{ doc("bronze_cdc_{c}") }}}}'}
             for c in BRONZE_CDC]
            + [{"name": c, "description": _sentence(c), "data_type": types[c]}
               for c in landed.columns]),
    }]

    model = f"slv_{system}__{table}"
    silver = project / "models" / "silver" / system
    model_sql = silver / f"{model}.sql"
    unique_key = repr(keys[0]) if len(keys) == 1 else repr(keys)
    select = ",\n".join(f"        {c}" for c in landed.columns)
    sql = (f"{{{{ config(unique_key={unique_key}) }}}}\n\n"
           f"with changes as (\n    {{{{ cdc_changes(source('{source}', '{table}')) }}}}\n),\n\n"
           f"final as (\n    select\n        {{{{ cdc_columns() }}}},\n{select}\n"
           f"    from changes\n)\n\nselect * from final\n")

    model_yaml = silver / f"_{system}__models.yml"
    models = _load(model_yaml, "models")
    columns_doc: list[dict[str, Any]] = []
    for c in landed.columns:
        column: dict[str, Any] = {"name": c, "description": _sentence(c)}
        if keys == [c]:
            column["data_tests"] = ["primary_key"]
        columns_doc.append(column)
    for c in SILVER_CDC:
        column = {"name": f"_cdc_{c}", "description": f'{{{{ doc("cdc_{c}") }}}}'}
        if c == "op":
            column["data_tests"] = [{"accepted_values": {"arguments": {"values": ["I", "U", "D"]}}}]
        columns_doc.append(column)
    model_entry: dict[str, Any] = {
        "name": model,
        "description": f"Current `{table}` rows of `{system}`, one per {', '.join(keys)}: the "
                       f"change files applied by the cdc_merge strategy (hard deletes).",
        "columns": columns_doc,
    }
    if len(keys) > 1:
        model_entry["data_tests"] = [{"primary_key": {"arguments": {"columns": keys}}}]
    models["models"] = [m for m in models["models"] if m["name"] != model] + [model_entry]

    header = (f"# Written by `lakehouse add-table`; edit freely (descriptions, types).\n"
              f"# Bronze: the {system} change files as external tables.\n")
    _dump(source_yaml, sources, header)
    model_sql.parent.mkdir(parents=True, exist_ok=True)
    model_sql.write_text(sql)
    _dump(model_yaml, models, f"# Silver: current state of the {system} tables (cdc_merge).\n")
    return Written(source_yaml, model_sql, model_yaml, source, model, keys, types, landed.notes)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", type=Path,
                        help="the folder one table's files land in, e.g. "
                        ".lakehouse/landing/pos/store (system pos, table store)")
    parser.add_argument("--key", help="key column(s), comma-separated (default: inferred, the "
                        "first *_id column unique in the full load)")
    parser.add_argument("--columns", help="the table's columns in file order, comma-separated, "
                        "for CSV files without a header row (DMS writes none by default)")
    parser.add_argument("--format", choices=("csv", "parquet", "debezium"),
                        help="default: from the file names")
    parser.add_argument("--system", help="source system (default: the parent folder's name)")
    parser.add_argument("--table", help="table name (default: the folder's name)")
    parser.add_argument("--landing-root", type=Path,
                        help="locations are written relative to it (default $LAKEHOUSE_LANDING, "
                        "else $LAKEHOUSE_HOME/landing)")
    parser.add_argument("--project-dir", type=Path, default=PROJECT_ROOT,
                        help="the dbt project to write into (default: this one)")
    parser.add_argument("--force", action="store_true", help="replace an existing entry")


def _split(text: str | None) -> list[str] | None:
    return [part.strip() for part in text.split(",") if part.strip()] if text else None


def main(args: argparse.Namespace) -> int:
    try:
        written = add_table(args.folder, project_dir=args.project_dir, system=args.system,
                            table=args.table, key=_split(args.key),
                            columns=_split(args.columns), fmt=args.format,
                            landing_root=args.landing_root, force=args.force)
    except AddTableError as error:
        print(f"lakehouse add-table: {error}")
        return 2
    print(f"source {written.source}, key {', '.join(written.key)}; columns: "
          + ", ".join(f"{c} {t}" for c, t in written.types.items()))
    for note in written.notes:
        print(f"note: {note}")
    for path in (written.source_yaml, written.model_sql, written.model_yaml):
        print(f"  wrote {path}")
    print(f"next: lakehouse dbt build --select {written.model}   (review the inferred types)")
    return 0
