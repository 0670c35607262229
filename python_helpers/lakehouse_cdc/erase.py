"""`lakehouse erase --subject customer_id=42`: GDPR erasure, recorded and proven.

Where a subject lives is declared, never hard-coded here: models, snapshots
and bronze source tables carry `meta: {gdpr_subject: {<key name>: <column>}}`
in their YAML (a source's also says which columns of its landing files to
read). A table mapping two keys (orders: customer_id and order_id)
leads from the subject to the other key's values (the customer's orders), and
every table mapping that key (order_items: order_id) loses those rows too.

Steps (each recorded in `<schema>_ops.erasure_ledger.step`; every step is
idempotent, so a run killed anywhere is completed by running it again):

1. `keys`      ledger row + the subject's keys (hashed) in `erasure_keys`,
               including the foreign keys found in the landing files;
2. `tables`    dbt run-operation `gdpr_forget_all`: rows out of every declared
               table, its CDC tombstones and quarantine (JSON records and raw
               lines as written, by whole field);
3. `rebuilt`   the table models downstream (gold marts) rebuilt;
4. `landing`   landing files rewritten without the subject's lines, keeping
               their modification time (silver does not take them as new);
5. `purged`    data files rewritten (position deletes applied), snapshots
               expired, orphan files removed, in every table that held the subject;
6. `certified` every file under the warehouse and landing folders and every
               table scanned for the subject's keys; any hit fails the erasure.

The ledger holds salted hashes, not values (see README, "Erasure (GDPR)").
"""

from __future__ import annotations

import argparse
import csv
import functools
import getpass
import gzip
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

PEPPER_ENV = "LAKEHOUSE_ERASURE_PEPPER"
STEPS = ("started", "keys", "tables", "rebuilt", "landing", "purged", "certified")
LAYERS = ("bronze", "silver", "snapshots", "dimensions", "gold", "seeds", "ops")
#: the CDC runs' scratch folder under the warehouse (macros/cdc/_cdc_scratch.sql)
SCRATCH = "_cdc_scratch"
_INT = re.compile(r"^[+-]?\d+$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HIDDEN_TMP = ".erasing"


class ErasureError(RuntimeError):
    """Erasure could not be completed or proven; the message says what is left."""


# --- hashing: the same rule as macros/ops/_gdpr_key_hash.sql -----------------

def _pepper() -> str:
    return os.environ.get(PEPPER_ENV, "")


def pepper_id() -> str:
    return hashlib.sha256(_pepper().encode()).hexdigest()[:12]


def normalize(value: Any) -> str | None:
    """A key value as Spark's cast(... as string) renders it (integers without
    padding or sign noise)."""
    if value is None:
        return None
    text = str(value).strip()
    if text == "":
        return None
    return str(int(text)) if _INT.match(text) else text


def key_hash(key: str, value: Any) -> str | None:
    text = normalize(value)
    if text is None:
        return None
    return hashlib.sha256(f"{_pepper()}{key}={text}".encode()).hexdigest()


def key_hash_sql(key: str, expression: str) -> str:
    pepper = _pepper().replace("'", "''")
    return f"sha2(concat('{pepper}', '{key}=', cast({expression} as string)), 256)"


# --- what is declared where ---------------------------------------------------

@dataclass
class Declarations:
    schema: str
    landing: Path
    warehouse: Path
    models: dict[str, dict[str, str]]  # relation -> {key: column}
    sources: dict[str, dict[str, str]]  # landing location (relative) -> {key: column}
    model_names: dict[str, str]  # relation -> model name
    downstream_tables: dict[str, str]  # table models fed by declared ones: name -> relation

    @property
    def pairs(self) -> set[tuple[str, str]]:
        """Every (key, column) declared anywhere: what the certificate looks for."""
        out = set()
        for mapping in [*self.models.values(), *self.sources.values()]:
            out.update(mapping.items())
        return out


def landing_root(vars: dict[str, Any]) -> Path:
    """The rule of macros/bronze/bronze_external_config.sql."""
    if "landing_root" in vars:
        return Path(vars["landing_root"])
    if "LAKEHOUSE_LANDING" in os.environ:
        return Path(os.environ["LAKEHOUSE_LANDING"])
    return Path(os.environ.get("LAKEHOUSE_HOME", ".lakehouse")) / "landing"


def load_declarations(schema: str, vars: dict[str, Any]) -> Declarations:
    from lakehouse_cdc.dbt_runner import run_dbt

    manifest = run_dbt(["parse"], schema=schema, vars=vars).result
    models: dict[str, dict[str, str]] = {}
    names: dict[str, str] = {}
    declared_ids = []
    for node in manifest.nodes.values():
        if node.resource_type not in ("model", "snapshot"):
            continue
        mapping = (node.config.meta or {}).get("gdpr_subject")
        if mapping and node.config.materialized not in ("view", "ephemeral"):
            relation = f"{node.schema}.{node.alias}"
            models[relation] = dict(mapping)
            names[relation] = node.name
            declared_ids.append(node.unique_id)
    # table and incremental models fed (directly or not) by a declared model:
    # rebuilt after erasure (incremental gold recomputes what the erasure
    # deleted from its inputs)
    if not manifest.child_map:
        manifest.build_parent_and_child_maps()
    children = manifest.child_map
    seen, todo, downstream = set(declared_ids), list(declared_ids), {}
    while todo:
        for child in children.get(todo.pop(), []):
            if child in seen or not child.startswith("model."):
                continue
            seen.add(child)
            todo.append(child)
            node = manifest.nodes[child]
            if node.config.materialized in ("table", "incremental"):
                downstream[node.name] = f"{node.schema}.{node.alias}"
    # bronze sources declare theirs in the table's meta, as models do; the
    # landing files under the source's location hold those columns
    sources: dict[str, dict[str, str]] = {}
    for source in manifest.sources.values():
        meta = {**(source.config.meta or {}), **(source.meta or {})}
        mapping = meta.get("gdpr_subject")
        location = (meta.get("external") or {}).get("location")
        if mapping and location:
            sources[str(location).strip("/")] = dict(mapping)
    home = Path(os.environ.get("LAKEHOUSE_HOME", ".lakehouse"))
    return Declarations(schema, landing_root(vars).resolve(), (home / "warehouse").resolve(),
                        models, sources, names, dict(sorted(downstream.items())))


# --- files: rows as {column: text} --------------------------------------------

def _csv_records(text: str) -> Iterator[str]:
    """Records of a CSV text exactly as written (quoted newlines kept inside)."""
    start, quoted = 0, False
    for i, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == "\n" and not quoted:
            yield text[start:i + 1]
            start = i + 1
    if start < len(text):
        yield text[start:]


def _parse_record(record: str) -> list[str]:
    try:
        return next(csv.reader([record.rstrip("\r\n")]), [])
    except csv.Error:  # a bare CR inside a field: split on commas (quotes kept)
        return record.rstrip("\r\n").split(",")


def _is_gzip(path: Path) -> bool:
    """By content, not name (Iceberg writes gzip metadata as *.gz.metadata.json)."""
    with open(path, "rb") as handle:
        return handle.read(2) == b"\x1f\x8b"


def _open_text(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def _kind(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz").removesuffix(_HIDDEN_TMP)
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".json", ".jsonl", ".ndjson")):
        return "json"
    if name.endswith((".csv", ".txt", ".tsv")):
        return "csv"
    return "other"


def _json_rows(text: str) -> Iterator[dict[str, Any]]:
    rows = []
    try:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError:
        rows = [json.loads(text)]

    def walk(value: Any) -> Iterator[dict[str, Any]]:
        if isinstance(value, dict):
            yield value
            for item in value.values():
                yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    for row in rows:
        yield from walk(row)


def file_rows(path: Path, columns: set[str]) -> Iterator[dict[str, Any]]:
    """The rows of a data file as {column: value}, only `columns` (those the
    subject can be in). Text files without a recognisable header are returned
    as {'*': field} per field, which any key matches: a certificate must
    rather fail than miss."""
    kind = _kind(path)
    if kind == "parquet":
        import pyarrow.parquet as pq

        schema_names = set(pq.read_schema(path).names)
        wanted = sorted(columns & schema_names)
        if not wanted:
            return
        for batch in pq.ParquetFile(path).iter_batches(columns=wanted):
            yield from batch.to_pylist()
        return
    text = _open_text(path)
    if kind == "json":
        try:
            yield from _json_rows(text)
            return
        except json.JSONDecodeError:
            kind = "other"
    records = list(_csv_records(text))
    header = _parse_record(records[0]) if records else []
    if kind != "csv" or not header:
        return
    if all(_NAME.match(name) for name in header):  # a header row: match by column
        for record in records[1:]:
            yield dict(zip(header, _parse_record(record), strict=False))
    else:  # no header naming the columns: any field may be the subject's
        for record in records:
            for value in _parse_record(record):
                yield {"*": value}


def row_matches(row: dict[str, Any], pairs: Iterable[tuple[str, str]],
                hashes: dict[str, set[str]]) -> bool:
    for key, column in pairs:
        for value in ([row[column]] if column in row else []) + ([row["*"]] if "*" in row else []):
            if value is not None and key_hash(key, value) in hashes.get(key, ()):
                return True
    return False


def _all_files(root: Path) -> Iterator[Path]:
    if root.exists():
        for dirpath, _, filenames in os.walk(root):
            for name in filenames:
                yield Path(dirpath) / name


# --- the erasure ---------------------------------------------------------------

@dataclass
class Erasure:
    spark: Any
    decl: Declarations
    subject_key: str
    value: str
    by: str
    vars: dict[str, Any] = field(default_factory=dict)
    log: Any = print

    def __post_init__(self) -> None:
        self.ops = f"{self.decl.schema}_ops"
        subject_hash = key_hash(self.subject_key, self.value)
        if subject_hash is None:
            raise ErasureError("the subject value is empty")
        self.subject_hash = subject_hash
        self.erasure_id = subject_hash[:16]
        self.run_id = f"{self.erasure_id}-{int(time.time() * 1000)}"

    def sql(self, query: str) -> list[Any]:
        return self.spark.sql(query).collect()

    # ledger --------------------------------------------------------------------
    def ensure_ledger(self) -> None:
        self.sql(f"create database if not exists {self.ops}")
        self.sql(f"""create table if not exists {self.ops}.erasure_ledger (
            erasure_id string, subject_key string, subject_hash string, pepper_id string,
            requested_at timestamp, requested_by string, status string, step string,
            tables_touched string, rows_removed bigint, files_rewritten bigint,
            completed_at timestamp) using iceberg""")
        self.sql(f"create table if not exists {self.ops}.erasure_keys "
                 "(erasure_id string, key_name string, key_hash string) using iceberg")
        self.sql(f"""create table if not exists {self.ops}.erasure_events (
            run_id string, origin string, relation string, rows_removed bigint,
            recorded_at timestamp) using iceberg""")

    def ledger_row(self) -> Any | None:
        rows = self.sql(f"select * from {self.ops}.erasure_ledger "
                        f"where erasure_id = '{self.erasure_id}'")
        return rows[0] if rows else None

    def set_step(self, step: str) -> None:
        """Record a step as done; a re-run never moves the record back."""
        row = self.ledger_row()
        if row is not None and STEPS.index(step) > STEPS.index(row.step):
            self.sql(f"update {self.ops}.erasure_ledger set step = '{step}' "
                     f"where erasure_id = '{self.erasure_id}'")
        self.log(f"[erase] step {step} done")

    def step_done(self, step: str) -> bool:
        row = self.ledger_row()
        return row is not None and STEPS.index(row.step) >= STEPS.index(step)

    def add_keys(self, key: str, hashes: Iterable[str]) -> int:
        values = sorted(set(hashes))
        if not values:
            return 0
        rows = ", ".join(f"('{self.erasure_id}', '{key}', '{h}')" for h in values)
        new = (f"select * from (values {rows}) as s(erasure_id, key_name, key_hash) "
               f"left anti join {self.ops}.erasure_keys as k on k.erasure_id = s.erasure_id "
               "and k.key_name = s.key_name and k.key_hash = s.key_hash")
        count = self.sql(f"select count(*) from ({new})")[0][0]
        if count:
            self.sql(f"insert into {self.ops}.erasure_keys {new}")
        return int(count)

    def hashes(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for row in self.sql(f"select key_name, key_hash from {self.ops}.erasure_keys "
                            f"where erasure_id = '{self.erasure_id}'"):
            out.setdefault(row.key_name, set()).add(row.key_hash)
        return out

    # landing files ---------------------------------------------------------------
    def landing_files(self) -> Iterator[tuple[Path, dict[str, str]]]:
        for path in _all_files(self.decl.landing):
            if path.name.endswith(_HIDDEN_TMP):  # a killed run's; removed before rewriting
                continue
            rel = path.relative_to(self.decl.landing).as_posix()
            for location, mapping in self.decl.sources.items():
                if rel.startswith(location + "/"):
                    yield path, mapping

    def subject_lines(self, hashes: dict[str, set[str]]) -> dict[Path, list[int]]:
        """1-based data row numbers of the subject's rows, per landing file."""
        found: dict[Path, list[int]] = {}
        for path, mapping in self.landing_files():
            pairs = list(mapping.items())
            columns = set(mapping.values())
            for number, row in enumerate(file_rows(path, columns), start=1):
                if row_matches(row, pairs, hashes):
                    found.setdefault(path, []).append(number)
        return found

    def landing_foreign_keys(self) -> int:
        """Other keys on landing rows of the subject (e.g. the order_id of an
        order that is no longer in silver but still in the change files)."""
        subject = {self.subject_key: {self.subject_hash}}
        found: dict[str, set[str]] = {}
        for path, mapping in self.landing_files():
            if self.subject_key not in mapping or len(mapping) < 2:
                continue
            for row in file_rows(path, set(mapping.values())):
                if row_matches(row, [(self.subject_key, mapping[self.subject_key])], subject):
                    for key, column in mapping.items():
                        digest = key_hash(key, row.get(column))
                        if key != self.subject_key and digest:
                            found.setdefault(key, set()).add(digest)
        return sum(self.add_keys(key, hashes) for key, hashes in found.items())

    def rewrite_landing(self, lines: dict[Path, list[int]]) -> int:
        """Rewrite each file without the subject's rows, with its original
        modification time. Silver knows applied files by path, time and size
        (macros/cdc/_cdc_new_files.sql, _cdc_logged): the rewritten version
        is logged as erased, for every model that logged the file, before
        it replaces the file, so that it is not read again as new (a run
        killed in between leaves both versions logged)."""
        for stale in _all_files(self.decl.landing):
            if stale.name.endswith(_HIDDEN_TMP):  # left by a killed run
                stale.unlink()
        for path, numbers in lines.items():
            drop = set(numbers)
            stat = path.stat()
            tmp = path.with_name(f".{path.name}{_HIDDEN_TMP}")  # hidden: bronze ignores it
            if _kind(path) == "parquet":
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pq.read_table(path)
                keep = [i + 1 not in drop for i in range(table.num_rows)]
                pq.write_table(table.filter(pa.array(keep)), tmp, compression="snappy")
            else:
                text = _open_text(path)
                if _kind(path) == "json":
                    records = text.splitlines(keepends=True)
                    kept = [r for i, r in enumerate((r for r in records if r.strip()), 1)
                            if i not in drop]
                else:
                    records = list(_csv_records(text))
                    kept = records[:1] + [r for i, r in enumerate(records[1:], 1) if i not in drop]
                data = "".join(kept).encode("utf-8")
                if _is_gzip(path):
                    data = gzip.compress(data)
                tmp.write_bytes(data)
            os.utime(tmp, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            self.log_erased_version(path, stat.st_mtime_ns // 1_000_000, tmp.stat().st_size)
            os.replace(tmp, path)
        return len(lines)

    @functools.cached_property
    def file_logs(self) -> list[str]:
        """The CDC models' file logs (`cdc_file_log`) of the project's schemas."""
        logs = [f"{self.decl.schema}_{layer}.cdc_file_log" for layer in LAYERS]
        return [log for log in logs if self.spark.catalog.tableExists(log)]

    def log_erased_version(self, path: Path, modified_ms: int, size: int) -> None:
        """Log, as erased, the rewritten version (`size` bytes, the same
        modification time) of a landing file for each model whose file log
        holds the file at that time; idempotent."""
        for log in self.file_logs:
            # (Spark writes a path as a URI, encoded: matched here, not in SQL)
            logged = self.sql(f"select distinct file_path from {log} "
                              f"where unix_millis(file_modified_at) = {modified_ms}")
            paths = sorted({r.file_path for r in logged
                            if Path(unquote(urlparse(r.file_path).path)) == path})
            if not paths:
                continue
            self.sql(f"""
                insert into {log} (model_name, file_path, file_modified_at, row_count, applied_at,
                    run_id, status, file_size, rows_in_file, rows_applied, rows_superseded,
                    rows_quarantined, events_skipped)
                select model_name, file_path, file_modified_at, 0, current_timestamp(),
                    '{self.run_id}', 'erased', {size}, null, 0, 0, 0, 0
                from (select distinct model_name, file_path, file_modified_at from {log}
                      where file_path in ({", ".join(map(_sql_text, paths))})
                          and unix_millis(file_modified_at) = {modified_ms}
                          and status <> 'ignored') as logged
                where not exists (
                    select 1 from {log} as l
                    where l.model_name = logged.model_name
                        and l.file_path = logged.file_path
                        and l.file_modified_at = logged.file_modified_at
                        and l.file_size = {size})""")

    # tables ----------------------------------------------------------------------
    def touched_tables(self) -> list[str]:
        rows = self.sql(f"select distinct relation from {self.ops}.erasure_events "
                        f"where run_id like '{self.erasure_id}-%'")
        names = {r.relation for r in rows} | set(self.decl.downstream_tables.values())
        return sorted(n for n in names if self.spark.catalog.tableExists(n))

    def purge_history(self, tables: list[str]) -> None:
        """No live file may hold the subject: apply deletes into new data files,
        expire every older snapshot, remove files nothing references."""
        jvm = self.spark._jvm
        now_ms = int(time.time() * 1000)
        for table in tables:
            call = "call spark_catalog.system."
            self.sql(f"{call}rewrite_data_files(table => '{table}', options => map("
                     "'delete-file-threshold', '1', 'min-input-files', '1'))")
            self.sql(f"{call}rewrite_position_delete_files(table => '{table}', "
                     "options => map('rewrite-all', 'true'))")
            newest = self.sql(f"select max(committed_at) from {table}.snapshots")[0][0]
            if newest is not None:
                self.sql(f"{call}expire_snapshots(table => '{table}', older_than => "
                         f"timestamp '{newest}', retain_last => 1)")
            # the procedure refuses ages under 24 h (a write in flight would lose its
            # files); erasure runs under the build lock, so the action is called directly
            iceberg = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
                self.spark._jsparkSession, table)
            (jvm.org.apache.iceberg.spark.actions.SparkActions.get(self.spark._jsparkSession)
             .deleteOrphanFiles(iceberg).olderThan(now_ms).execute())
        # a CDC run's batch (macros/cdc/_cdc_scratch.sql) is emptied when the
        # run ends; one killed midway leaves it until the model's next run.
        # Nothing in it is needed (the re-run reads its files again): under
        # the build lock, remove it
        shutil.rmtree(self.decl.warehouse / SCRATCH, ignore_errors=True)

    # the whole run -----------------------------------------------------------------
    def run(self) -> Certificate:
        from lakehouse_cdc.dbt_runner import run_dbt

        self.ensure_ledger()
        row = self.ledger_row()
        if row is None:
            self.sql(f"insert into {self.ops}.erasure_ledger values ('{self.erasure_id}', "
                     f"'{self.subject_key}', '{self.subject_hash}', '{pepper_id()}', "
                     f"current_timestamp(), '{self.by}', 'in_progress', 'started', null, 0, 0, "
                     "null)")
        elif row.status == "readmitted":
            self.sql(f"update {self.ops}.erasure_ledger set status = 'in_progress', "
                     f"step = 'started' where erasure_id = '{self.erasure_id}'")
        elif row.pepper_id != pepper_id():
            raise ErasureError(f"this subject was erased with another {PEPPER_ENV}")
        else:
            self.sql(f"update {self.ops}.erasure_ledger set status = 'in_progress' "
                     f"where erasure_id = '{self.erasure_id}'")
        self.log(f"[erase] {self.subject_key}=<value> as erasure {self.erasure_id}")

        self.add_keys(self.subject_key, [self.subject_hash])
        self.landing_foreign_keys()
        self.set_step("keys")

        result = run_dbt(["run-operation", "gdpr_forget_all", "--args",
                          json.dumps({"run_id": self.run_id, "origin": "erase"})],
                         schema=self.decl.schema, vars=self.vars)
        del result
        lines = self.subject_lines(self.hashes())
        removed_now = self.sql(f"select coalesce(sum(rows_removed), 0) from "
                               f"{self.ops}.erasure_events where run_id = '{self.run_id}'")[0][0]
        self.set_step("tables")

        if self.decl.downstream_tables and (removed_now or not self.step_done("rebuilt")):
            self.log(f"[erase] rebuilding {', '.join(self.decl.downstream_tables)}")
            run_dbt(["run", "--select", *self.decl.downstream_tables],
                    schema=self.decl.schema, vars=self.vars)
        self.set_step("rebuilt")

        files = self.rewrite_landing(lines)
        self.set_step("landing")

        tables = self.touched_tables()
        if removed_now or files or not self.step_done("purged"):
            self.log(f"[erase] purging history of {len(tables)} table(s)")
            self.purge_history(tables)
        self.set_step("purged")

        certificate = certify(self.spark, self.decl, self.hashes())
        self.log(certificate.report())
        if not certificate.clean:
            self.sql(f"update {self.ops}.erasure_ledger set status = 'failed' "
                     f"where erasure_id = '{self.erasure_id}'")
            raise ErasureError("erasure NOT proven: the subject is still in\n  "
                               + "\n  ".join(certificate.found))
        totals = self.sql(f"select count(distinct relation), coalesce(sum(rows_removed), 0), "
                          f"concat_ws(', ', sort_array(collect_set(relation))) "
                          f"from {self.ops}.erasure_events "
                          f"where run_id like '{self.erasure_id}-%'")[0]
        self.sql(f"update {self.ops}.erasure_ledger set status = 'completed', step = 'certified', "
                 f"tables_touched = '{totals[2]}', rows_removed = {totals[1]}, "
                 f"files_rewritten = files_rewritten + {files}, "
                 f"completed_at = coalesce(completed_at, current_timestamp()) "
                 f"where erasure_id = '{self.erasure_id}'")
        certificate.rows_removed_now = int(removed_now)
        certificate.files_rewritten_now = files
        self.log(f"[erase] done: {removed_now} row(s) removed and {files} landing file(s) "
                 f"rewritten by this run; {totals[1]} row(s) from {totals[0]} table(s) in all")
        return certificate


def _sql_text(value: str) -> str:
    """A Spark SQL string literal (the rule of macros/bronze/sql_string.sql)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --- the certificate -------------------------------------------------------------

@dataclass
class Certificate:
    files_scanned: int
    tables_scanned: int
    found: list[str]
    rows_removed_now: int = 0
    files_rewritten_now: int = 0

    @property
    def clean(self) -> bool:
        return not self.found

    def report(self) -> str:
        verdict = "CLEAN: the subject is in no file and no table" if self.clean else (
            f"FOUND in {len(self.found)} place(s)")
        return (f"[erase] certificate: scanned {self.files_scanned} file(s) under the warehouse "
                f"and landing folders and {self.tables_scanned} table(s): {verdict}")


def certify(spark: Any, decl: Declarations, hashes: dict[str, set[str]]) -> Certificate:
    """Look for the subject's keys in every data file on disk (Parquet, CSV,
    JSON, gzip) and in every table of the project, by column: a key is found
    when a column mapped to it anywhere holds one of its values."""
    pairs = sorted(decl.pairs)
    columns = {column for _, column in pairs}
    found, files = [], 0
    for root in (decl.warehouse, decl.landing):
        for path in _all_files(root):
            if _kind(path) == "other" and not path.name.endswith(_HIDDEN_TMP):
                continue  # Avro manifests, Derby files, checksums: no row values
            files += 1
            if any(row_matches(row, pairs, hashes) for row in file_rows(path, columns)):
                found.append(f"file {path}")
            elif _is_quarantine_file(path) and _quarantine_file_holds(spark, path, decl, pairs,
                                                                      hashes):
                found.append(f"file {path} (a quarantined record)")
    tables = 0
    for layer in LAYERS:
        schema = f"{decl.schema}_{layer}"
        if not spark.catalog.databaseExists(schema):
            continue
        for table in spark.catalog.listTables(schema):
            name = f"{schema}.{table.name}"
            if table.isTemporary or table.tableType in ("VIEW", "TEMPORARY"):
                continue
            spark.sql(f"refresh table {name}")
            present = {c.name.lower() for c in spark.catalog.listColumns(name)}
            tests = [key_hash_sql(key, f"`{column}`") + f" in ({_in(hashes.get(key))})"
                     for key, column in pairs if column.lower() in present and hashes.get(key)]
            if {"record", "model_name"} <= present:  # quarantine: rows as written
                tests += _quarantine_tests(decl, pairs, hashes)
            tables += 1
            if tests and spark.sql(f"select count(*) from {name} where "
                                   + " or ".join(tests)).collect()[0][0]:
                found.append(f"table {name}")
    return Certificate(files, tables, found)


def _is_quarantine_file(path: Path) -> bool:
    """A Parquet data file of a quarantine table: rows as written, in `record`."""
    if _kind(path) != "parquet":
        return False
    import pyarrow.parquet as pq

    return {"record", "model_name"} <= set(pq.read_schema(path).names)


def _quarantine_file_holds(spark: Any, path: Path, decl: Declarations,
                           pairs: list[tuple[str, str]], hashes: dict[str, set[str]]) -> bool:
    """The quarantine's raw records in one of its data files, matched by the
    same rule as the table (_quarantine_tests): a file the table no longer
    references (an old snapshot's, an orphan) is read too."""
    tests = _quarantine_tests(decl, pairs, hashes)
    if not tests:
        return False
    spark.read.parquet(str(path)).createOrReplaceTempView("_erase_quarantine_file")
    try:
        return bool(spark.sql("select count(*) from _erase_quarantine_file where "
                              + " or ".join(tests)).collect()[0][0])
    finally:
        spark.catalog.dropTempView("_erase_quarantine_file")


def record_values_sql(column: str | None, record: str = "record") -> str:
    """The values of a quarantined record, as an SQL array of strings: of a
    JSON record the values of field `column` at any depth; of any other record
    (a raw CSV line) every field when `column` is None, else none. Whole
    values: 42 is not a value of 142. The rule macros/ops/_gdpr_record_match.sql
    applies when it removes such rows."""
    fields = (f"transform(split({record}, ','), f -> trim(both '\"' from trim(f)))"
              if column is None else "cast(array() as array<string>)")
    json_values = ("cast(array() as array<string>)" if column is None else
                   f"regexp_extract_all({record}, '\"{column}\"\\\\s*:\\\\s*\"?"
                   "([^\",}\\\\]]*)', 1)")
    return (f"case when left(ltrim({record}), 1) in ('{{', '[') then {json_values} "
            f"else {fields} end")


def record_match_sql(key: str, values_sql: str, hashes: set[str]) -> str:
    normal = ("case when trim(v) rlike '^[+-]?[0-9]+$' "
              "then cast(cast(trim(v) as decimal(38, 0)) as string) else trim(v) end")
    return (f"arrays_overlap(transform({values_sql}, v -> {key_hash_sql(key, normal)}), "
            f"array({_in(hashes)}))")


def _quarantine_tests(decl: Declarations, pairs: list[tuple[str, str]],
                      hashes: dict[str, set[str]]) -> list[str]:
    """A JSON record holds a key under its column's name, whatever the model;
    a raw line's fields are compared with the keys its model declares."""
    tests = [record_match_sql(key, record_values_sql(column), hashes[key])
             for key, column in pairs if hashes.get(key)]
    for relation, mapping in sorted(decl.models.items()):
        name = decl.model_names[relation]
        tests += [f"(model_name = '{name}' and "
                  f"{record_match_sql(key, record_values_sql(None), hashes[key])})"
                  for key in sorted(mapping) if hashes.get(key)]
    return tests


def _in(values: set[str] | None) -> str:
    return ", ".join(f"'{v}'" for v in sorted(values or ()))


# --- command line ----------------------------------------------------------------

def _subject(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. customer_id=42), got {text!r}")
    return key.strip(), value.strip()


def _local_spark() -> Any:
    """This process's Spark, on the local target only: on another target
    (the cluster) it would read this process's catalog, not the cluster's,
    so erase refuses before anything."""
    from lakehouse_cdc.spark import get_spark, not_on_local_target

    refusal = not_on_local_target("erase", "its Spark reads the tables and landing files "
                                  "through this process's catalog, not the cluster's")
    if refusal:
        raise ErasureError(refusal)
    return get_spark()


def erase(schema: str, subject_key: str, value: str, *, by: str | None = None,
          vars: dict[str, Any] | None = None, log: Any = None) -> Certificate:
    from lakehouse_cdc.dbt_runner import run_dbt

    spark = _local_spark()
    # The build lock, as `lakehouse maintain` takes it, held for the whole
    # erasure: every dbt invocation of it runs as its holder (the var), so its
    # own `dbt run` renews the lock instead of being refused, and leaves it
    # held at its end. The holder is the erasure's: re-running a killed
    # erasure takes its lock back at once. A no-op where builds take no lock.
    holder = f"erase-{(key_hash(subject_key, value) or '')[:16]}"
    vars = {**(vars or {}), "lakehouse_lock_holder": holder}
    decl = load_declarations(schema, vars)
    keys = {key for mapping in [*decl.models.values(), *decl.sources.values()] for key in mapping}
    if subject_key not in keys:
        raise ErasureError(f"no model or source declares the subject key {subject_key!r} "
                           f"(declared: {', '.join(sorted(keys)) or 'none'}); add "
                           f"`meta: {{gdpr_subject: {{{subject_key}: <column>}}}}` to the YAML")
    run_dbt(["run-operation", "lakehouse_lock_acquire", "--args",
             json.dumps({"purpose": "lakehouse erase"})], schema=schema, vars=vars)
    try:
        return Erasure(spark, decl, subject_key, value, by or getpass.getuser(), vars,
                       log or functools.partial(print, flush=True)).run()
    finally:
        run_dbt(["run-operation", "lakehouse_lock_release", "--args",
                 json.dumps({"holder": holder})], schema=schema, vars=vars)


def readmit(schema: str, subject_key: str, value: str) -> int:
    spark = _local_spark()
    erasure_id = (key_hash(subject_key, value) or "")[:16]
    table = f"{schema}_ops.erasure_ledger"
    if not spark.catalog.tableExists(table):
        return 0
    count = spark.sql(f"select count(*) from {table} where erasure_id = '{erasure_id}' "
                      "and status <> 'readmitted'").collect()[0][0]
    if count:
        spark.sql(f"update {table} set status = 'readmitted' where erasure_id = '{erasure_id}'")
    return int(count)


def status(schema: str) -> str:
    spark = _local_spark()
    ops = f"{schema}_ops"
    if not spark.catalog.tableExists(f"{ops}.erasure_ledger"):
        return "no erasure recorded"
    lines = [f"{'erasure':<18}{'status':<13}{'step':<11}{'rows':>7}  {'requested':<21}by"]
    blocked = {r.relation: r.rows for r in spark.sql(
        f"select relation, sum(rows_removed) as rows from {ops}.erasure_events "
        "where origin = 'post-hook' group by relation").collect()}
    for r in spark.sql(f"select * from {ops}.erasure_ledger order by requested_at").collect():
        lines.append(f"{r.erasure_id:<18}{r.status:<13}{r.step:<11}{r.rows_removed or 0:>7}  "
                     f"{str(r.requested_at)[:19]:<21}{r.requested_by}")
    lines.append("rows of erased subjects removed by later builds (post-hook): "
                 + (", ".join(f"{k}: {v}" for k, v in sorted(blocked.items())) or "none"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lakehouse erase",
        description="Erase a data subject (GDPR art. 17) from the landing files, every "
        "declared table (meta.gdpr_subject), their CDC bookkeeping and history, then prove "
        "it: every file under the warehouse and landing folders and every table is scanned "
        "for the subject's keys, and the command fails if any is found. Recorded in "
        "<schema>_ops.erasure_ledger (salted hashes, not values); later changes of the "
        "subject are removed by every build. Re-running completes an interrupted erasure.")
    parser.add_argument("--subject", type=_subject, metavar="KEY=VALUE",
                        help="the subject, e.g. customer_id=42")
    parser.add_argument("--schema", default="lakehouse", help="schema prefix (default lakehouse)")
    parser.add_argument("--landing", help="landing folder (default $LAKEHOUSE_LANDING, "
                        "else $LAKEHOUSE_HOME/landing)")
    parser.add_argument("--by", help="who asks (recorded in the ledger; default: OS user)")
    parser.add_argument("--readmit", action="store_true",
                        help="lift the erasure of --subject: later changes are applied again")
    parser.add_argument("--status", action="store_true", help="print the ledger and exit")
    args = parser.parse_args(argv)
    if not args.status and args.subject is None:
        parser.error("--subject KEY=VALUE is required (or --status)")

    from lakehouse_cdc.dbt_runner import DbtError
    from lakehouse_cdc.pipeline import lakehouse_home

    lakehouse_home()
    vars = {"landing_root": args.landing} if args.landing else {}
    try:
        if args.status:
            print(status(args.schema))
        elif args.readmit:
            count = readmit(args.schema, *args.subject)
            print(f"[erase] {'re-admitted' if count else 'no erasure in force for'} "
                  f"{args.subject[0]}=<value>")
        else:
            erase(args.schema, *args.subject, by=args.by, vars=vars)
    except (ErasureError, DbtError) as error:
        print(f"[erase] FAILED: {error}", file=sys.stderr)
        return 1
    return 0


__all__ = ["Certificate", "Declarations", "ErasureError", "certify", "erase", "file_rows",
           "key_hash", "main", "readmit", "status"]
