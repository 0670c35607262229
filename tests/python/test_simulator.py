"""The DMS change-file simulator: determinism, traps, and agreement between the
files it writes and the ground truth it keeps (pure Python, no Spark)."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from lakehouse_cdc.simulator import (
    TABLES,
    SimulationConfig,
    land_batch,
    read_files,
    read_final,
    read_manifest,
    read_rejects,
    read_state_after,
    read_versions,
    simulate,
)
from lakehouse_cdc.simulator.truth import REJECT_REASONS

SMALL = {"scale": 300, "batches": 3}


def _sim(tmp_path: Path, name: str = "sim", **knobs) -> Path:
    out = tmp_path / name
    simulate(SimulationConfig(out=out, **knobs))
    return out


def _hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --- independent reading of the change files (Python's csv module only) -------


def _read_dms_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _replay(sim_dir: Path, up_to_batch: int, null: str | None) -> dict[str, dict]:
    """Apply the landed files of batches 0..up_to_batch, skipping listed
    rejects, dropping exact repeats, in (commit ts, change seq) order.

    `null` is the literal used for NULL (None: NULL and '' are not told
    apart, both become None)."""
    rejects = {(r.file, r.row) for r in read_rejects(sim_dir)}
    events = []
    seen: set[tuple[str, ...]] = set()
    for batch in read_manifest(sim_dir)["batches"]:
        if batch["batch"] > up_to_batch:
            continue
        for entry in batch["files"]:
            header, rows = _read_dms_csv(sim_dir / entry["path"])
            assert len(rows) == entry["rows"], entry["path"]
            for number, raw in enumerate(rows, start=1):
                if (entry["path"], number) in rejects:
                    continue
                record = dict(zip(header, raw, strict=True))
                record.setdefault("Op", "I")  # full load without an Op column
                signature = (entry["table"], *(f"{k}={v}" for k, v in sorted(record.items())))
                if signature in seen:
                    continue
                seen.add(signature)
                events.append((record["dms_commit_ts"], record["AR_H_CHANGE_SEQ"],
                               entry["table"], record))
    events.sort(key=lambda e: (e[0], e[1]))
    state: dict[str, dict] = {name: {} for name in TABLES}
    for _, _, table, record in events:
        t = TABLES[table]
        values = {}
        for col in t.all_columns:
            v = record.get(col.name)
            values[col.name] = None if v is None or v == null or (null is None and v == "") \
                else v
        key = tuple(values[k] for k in t.key)
        assert record["Op"] in ("I", "U", "D")
        if record["Op"] == "D":
            state[table].pop(key, None)
        else:
            state[table][key] = values
    return state


def _as_map(table: str, rows: list[dict], lossy: bool = False) -> dict:
    t = TABLES[table]
    out = {}
    for row in rows:
        values = {k: (None if lossy and v == "" else v) for k, v in row.items()
                  if k not in ("batch", "op", "dms_commit_ts", "AR_H_CHANGE_SEQ")}
        out[tuple(values[k] for k in t.key)] = values
    return out


def _project(state: dict, columns: list[str]) -> dict:
    return {key: {c: row.get(c) for c in columns} for key, row in state.items()}


def _check_files_reproduce_truth(sim_dir: Path, null: str | None) -> None:
    lossy = null is None
    batches = read_manifest(sim_dir)["knobs"]["batches"]
    for k in range(batches + 1):
        replayed = _replay(sim_dir, k, null)
        for table in TABLES:
            truth_rows = read_final(sim_dir, table) if k == batches else None
            expected = _as_map(table, read_state_after(sim_dir, table, k), lossy)
            if expected:
                columns = list(next(iter(expected.values())))
                assert _project(replayed[table], columns) == expected, (table, k)
            else:
                assert replayed[table] == {}, (table, k)
            if truth_rows is not None:
                final = _as_map(table, truth_rows, lossy)
                columns = list(next(iter(final.values()))) if final else []
                assert _project(replayed[table], columns) == final, table


# --- tests ------------------------------------------------------------------


def test_same_seed_same_bytes_different_seed_different(tmp_path: Path) -> None:
    a = _hashes(_sim(tmp_path, "a", seed=7, **SMALL))
    b = _hashes(_sim(tmp_path, "b", seed=7, **SMALL))
    c = _hashes(_sim(tmp_path, "c", seed=8, **SMALL))
    assert a == b
    assert len(a) > 40
    assert a != c


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"full_load_op": "absent", "add_column_at_batch": 1, "batches": 4},
        {"tie_rate": 0.3, "late_rate": 0.2, "multi_change_rate": 0.4, "redeliver_rate": 0.2,
         "malformed_rate": 0.05, "batches": 5, "changes_per_batch": 150, "mix": (30, 40, 30)},
        {"add_column_at_batch": 0, "cdc_file_rows": 7, "seed": 3},
        {"scale": 3, "batches": 5, "tie_rate": 1.0, "late_rate": 1.0, "multi_change_rate": 1.0,
         "redeliver_rate": 1.0, "malformed_rate": 1.0},
        {"scale": 5, "batches": 4, "mix": (0, 0, 100)},
        {"batches": 0},
    ],
    ids=["defaults", "no-op-column", "heavy-traps", "no-added-column", "all-rates-1",
         "deletes-only", "full-load-only"],
)
def test_versions_and_files_reproduce_truth(tmp_path: Path, knobs: dict) -> None:
    params = {**SMALL, **knobs}
    sim_dir = _sim(tmp_path, csv_null="NULL", **params)
    # 1. versions.csv in (commit ts, change seq) order rebuilds final and each state
    for table in TABLES:
        versions = read_versions(sim_dir, table)
        keys = [(v["dms_commit_ts"], v["AR_H_CHANGE_SEQ"] or "") for v in versions]
        assert keys == sorted(keys)
        for k in range(params["batches"] + 1):
            state: dict = {}
            for v in versions:
                if int(v["batch"]) > k:
                    continue
                row = _as_map(table, [v])
                (key, values), = row.items()
                if v["op"] == "D":
                    state.pop(key, None)
                else:
                    state[key] = values
            expected = _as_map(table, read_state_after(sim_dir, table, k))
            columns = list(next(iter(expected.values()))) if expected else []
            assert _project(state, columns) == expected, (table, k)
            if k == params["batches"]:
                assert state == _as_map(table, read_final(sim_dir, table)), table
    # 2. the files alone (csv module), with NULL as a literal: exact agreement
    _check_files_reproduce_truth(sim_dir, null="NULL")


def test_files_reproduce_truth_with_default_null(tmp_path: Path) -> None:
    sim_dir = _sim(tmp_path, seed=11, **SMALL)
    _check_files_reproduce_truth(sim_dir, null=None)


def test_null_and_empty_string_are_distinct(tmp_path: Path) -> None:
    sim_dir = _sim(tmp_path, **SMALL)
    load = (sim_dir / "dms/retail/customer_master/LOAD00000001.csv").read_text("utf-8")
    # employer_name is the 4th table column: after Op, ts, seq, id, first, last
    lines = [ln for ln in load.splitlines() if re.match(r"I,[^,]+,,\d+,", ln)]
    assert any(re.match(r'I,[^,]+,,\d+,[^,]+,[^,"]+,,[^,]+@', ln) for ln in lines)
    assert any(re.match(r'I,[^,]+,,\d+,[^,]+,[^,"]+,"",[^,]+@', ln) for ln in lines)
    employers = [r["employer_name"] for r in read_final(sim_dir, "customer_master")]
    assert None in employers and "" in employers
    final_text = (sim_dir / "truth/customer_master/final.csv").read_text("utf-8")
    assert ',"",' in final_text

    nulls = _sim(tmp_path, "nulls", csv_null="NULL", **SMALL)
    text = (nulls / "dms/retail/customer_master/LOAD00000001.csv").read_text("utf-8")
    assert ",NULL," in text and ',"",' in text
    header, rows = _read_dms_csv(nulls / "dms/retail/customer_master/LOAD00000001.csv")
    i = header.index("employer_name")
    seen = {r[i] for r in rows}
    assert "NULL" in seen and "" in seen
    assert all(r[header.index("AR_H_CHANGE_SEQ")] == "NULL" for r in rows)


def test_load_files_use_a_hex_counter(tmp_path: Path) -> None:
    sim_dir = _sim(tmp_path, scale=130, batches=1, load_file_rows=10)
    names = [Path(f.file).name for f in read_files(sim_dir)
             if f.table == "customer_master" and f.kind == "load"]
    assert names[:12] == [f"LOAD{n:08X}.csv" for n in range(1, 13)]
    assert names[9] == "LOAD0000000A.csv" and len(names) == 13
    assert sum(f.rows for f in read_files(sim_dir)
               if f.table == "customer_master" and f.kind == "load") == 130


def test_full_load_op_absent_drops_the_column(tmp_path: Path) -> None:
    sim_dir = _sim(tmp_path, full_load_op="absent", **SMALL)
    header, rows = _read_dms_csv(sim_dir / "dms/retail/orders/LOAD00000001.csv")
    assert header[:3] == ["dms_commit_ts", "AR_H_CHANGE_SEQ", "order_id"]
    # orders, the fourth table, loaded 21 s after the first
    assert {r[0] for r in rows} == {"2025-01-01 00:00:21.000000"} and {r[1] for r in rows} == {""}
    cdc = next(f for f in read_files(sim_dir) if f.kind == "cdc")
    assert _read_dms_csv(sim_dir / cdc.file)[0][0] == "Op"


def test_every_trap_is_present_with_default_knobs(tmp_path: Path) -> None:
    sim_dir = _sim(tmp_path)  # every knob at its default
    files = read_files(sim_dir)
    kinds = Counter(f.kind for f in files)
    assert kinds["load"] and kinds["cdc"] and kinds["late"] and kinds["redelivery"]

    def hour(ts: str) -> str:
        return ts[:13]

    ties = multi = reinserted = 0
    for table in TABLES:
        per_key: dict = defaultdict(list)
        for v in read_versions(sim_dir, table):
            if v["batch"] != "0":
                per_key[tuple(v[k] for k in TABLES[table].key)].append(v)
        for versions in per_key.values():
            stamps = Counter(v["dms_commit_ts"] for v in versions)
            ties += any(n > 1 for n in stamps.values())
            by_hour = Counter(hour(v["dms_commit_ts"]) for v in versions)
            multi += any(n > 1 for n in by_hour.values())
            ops = [(hour(v["dms_commit_ts"]), v["op"]) for v in versions]
            reinserted += any(a[0] == b[0] and a[1] == "D" and b[1] == "I"
                              for a, b in zip(ops, ops[1:], strict=False))
    assert ties and multi and reinserted

    # a late file holds an update older than a delete of that key landed earlier
    deletes: dict = {}
    for f in files:
        if f.kind in ("cdc", "late"):
            header, rows = _read_dms_csv(sim_dir / f.file)
            key_idx = [header.index(k) for k in TABLES[f.table].key]
            for r in rows:
                if r[0] == "D" and r[1]:
                    deletes.setdefault((f.table, tuple(r[i] for i in key_idx)), []).append(
                        (f.batch, r[1]))
    found = False
    for f in files:
        if f.kind == "late":
            header, rows = _read_dms_csv(sim_dir / f.file)
            key_idx = [header.index(k) for k in TABLES[f.table].key]
            for r in rows:
                later = deletes.get((f.table, tuple(r[i] for i in key_idx)), [])
                found |= r[0] == "U" and any(b < f.batch and ts > r[1] for b, ts in later)
    assert found

    # a redelivered file repeats an earlier file byte for byte
    contents = {f.file: (sim_dir / f.file).read_bytes() for f in files if f.kind != "load"}
    for f in files:
        if f.kind == "redelivery":
            twins = [p for p, data in contents.items()
                     if p != f.file and data == contents[f.file]]
            assert twins
    # duplicate rows inside a file
    assert any(max(Counter(map(tuple, _read_dms_csv(sim_dir / f.file)[1])).values()) > 1
               for f in files if f.kind == "cdc")
    # the added column: later customer_master files carry it, older ones do not
    headers = {f.file: _read_dms_csv(sim_dir / f.file)[0] for f in files
               if f.table == "customer_master"}
    assert any(h[-1] == "loyalty_tier" for h in headers.values())
    assert any(h[-1] == "row_audit_ts" for h in headers.values())
    tiers = {r["loyalty_tier"] for r in read_final(sim_dir, "customer_master")}
    assert tiers - {None}
    # each reject reason, pointing at a real data row
    rejects = read_rejects(sim_dir)
    assert {r.reason for r in rejects} == set(REJECT_REASONS)
    for r in rejects:
        header, rows = _read_dms_csv(sim_dir / r.file)
        row = dict(zip(header, rows[r.row - 1], strict=True))
        if r.reason == "missing_key":
            assert any(row[k] == "" for k in TABLES[r.table].key)
        elif r.reason == "unknown_op":
            assert row["Op"] not in ("I", "U", "D")
        elif r.reason == "missing_sequence":
            assert row["dms_commit_ts"] == ""
        else:
            assert "abc" in rows[r.row - 1] or "2025-13-45 99:00:00" in rows[r.row - 1]
    # change sequences: 35 digits, first 16 from the commit time
    for v in read_versions(sim_dir, "orders"):
        if v["batch"] != "0":
            seq, ts = v["AR_H_CHANGE_SEQ"], v["dms_commit_ts"]
            assert len(seq) == 35 and seq.isdigit()
            assert seq[:16] == re.sub(r"\D", "", ts)[:16]


def test_land_batch_copies_with_layout(tmp_path: Path) -> None:
    sim_dir = _sim(tmp_path, **SMALL)
    landing = tmp_path / "landing"
    landed = land_batch(sim_dir, landing, 1)
    expected = [e["path"] for e in read_manifest(sim_dir)["batches"][1]["files"]]
    assert [p.relative_to(landing).as_posix() for p in landed] == \
        [e.split("/", 1)[1] for e in expected]
    assert all(p.read_bytes() == (sim_dir / e).read_bytes()
               for p, e in zip(landed, expected, strict=True))
    assert all(p.stat().st_mtime >= (sim_dir / e).stat().st_mtime - 1
               for p, e in zip(landed, expected, strict=True))


def test_parquet_and_debezium_match_csv_row_counts(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    csv_dir = _sim(tmp_path, "csv", **SMALL)
    pq_dir = _sim(tmp_path, "pq", format="parquet", **SMALL)
    pq_again = _sim(tmp_path, "pq2", format="parquet", **SMALL)
    dbz_dir = _sim(tmp_path, "dbz", format="debezium", **SMALL)
    assert _hashes(pq_dir) == _hashes(pq_again)

    def counts(sim_dir: Path) -> list[tuple]:
        return [(f.batch, f.table, Path(f.file).stem, f.rows, f.kind)
                for f in read_files(sim_dir)]

    assert counts(csv_dir) == counts(pq_dir) == counts(dbz_dir)
    for f in read_files(pq_dir):
        table = pq.read_table(sim_dir_path := pq_dir / f.file)
        assert table.num_rows == f.rows, sim_dir_path
        csv_header, csv_rows = _read_dms_csv(csv_dir / f.file.replace(".parquet", ".csv"))
        assert table.column_names == csv_header
        assert all(str(t) == "string" for t in table.schema.types)
        if f.kind == "load" and f.table == "customer_master":
            employer = table.column("employer_name").to_pylist()
            assert None in employer and "" in employer
    ops = Counter()
    for f in read_files(dbz_dir):
        assert f.file.startswith("debezium/retail/") and f.file.endswith(".json")
        lines = (dbz_dir / f.file).read_text("utf-8").splitlines()
        assert len(lines) == f.rows
        docs = [json.loads(line) for line in lines]
        ops.update(d["__op"] for d in docs)
        assert all(d["__deleted"] in ("true", "false") for d in docs)
    assert {"r", "c", "u", "d"} <= set(ops)
    # lsn gives the true order: the last version per key is the live row
    final = _as_map("product", read_final(csv_dir, "product"))
    latest: dict = {}
    for f in read_files(dbz_dir):
        if f.table == "product":
            for line in (dbz_dir / f.file).read_text("utf-8").splitlines():
                d = json.loads(line)
                if d["__op"] == "x" or d["__lsn"] is None or d["product_id"] is None:
                    continue
                if not isinstance(d["row_audit_ts"], int) or not isinstance(d["unit_price"],
                                                                            str):
                    continue
                key = (str(d["product_id"]),)
                if key not in latest or d["__lsn"] >= latest[key]["__lsn"]:
                    latest[key] = d
    live = {k: d for k, d in latest.items() if d["__deleted"] == "false"}
    assert set(live) == set(final)
    assert all(live[k]["unit_price"] == final[k]["unit_price"] for k in final)


def test_cli_help_and_run(tmp_path: Path) -> None:
    help_text = subprocess.run([sys.executable, "-m", "lakehouse_cdc.simulator", "--help"],
                               capture_output=True, text=True, check=True).stdout
    for flag in ("--seed", "--scale", "--batches", "--changes-per-batch", "--mix",
                 "--multi-change-rate", "--tie-rate", "--late-rate", "--redeliver-rate",
                 "--add-column-at-batch", "--malformed-rate", "--format", "--full-load-op",
                 "--csv-null", "--load-file-rows", "--quiet"):
        assert flag in help_text
    out = tmp_path / "cli"
    args = [sys.executable, "-m", "lakehouse_cdc.simulator", "--out", str(out), "--scale", "50",
            "--batches", "2", "--mix", "60,30,10"]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "batch 2/2" in done.stderr
    assert read_manifest(out)["knobs"]["mix"] == [60, 30, 10]
    again = subprocess.run(args, capture_output=True, text=True)
    assert again.returncode == 2 and "--overwrite" in again.stderr


@pytest.mark.slow
def test_one_million_rows(tmp_path: Path) -> None:
    started = time.perf_counter()
    result = simulate(SimulationConfig(out=tmp_path / "big", scale=91_000))
    seconds = time.perf_counter() - started
    print(f"\n1M-row simulation: {result.rows:,} rows in {len(read_files(result.out))} files, "
          f"{seconds:.1f}s, {result.rows / seconds:,.0f} rows/s")
    assert result.rows >= 1_000_000
    for f in read_files(result.out):
        assert len(_read_dms_csv(result.out / f.file)[1]) == f.rows, f.file
