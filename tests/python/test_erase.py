"""`lakehouse erase --subject customer_id=N`, end to end in child processes
(their own JVM and metastore, so that one can be killed with SIGKILL):

1. build everything on batch 0 (with a line of the subject that silver
   quarantines as written), then erase the subject and kill -9 it while it
   rebuilds gold;
2. erase again (completes), and once more (a no-op); the certificate finds
   the subject's quarantined raw line when it is put back;
3. land batch 1, which carries changes of the subject (one of them a line
   quarantined as written), and build (in the JVM of step 2, once the test
   has checked the files on disk).

Expectations come from the simulator's truth files and from the tables as
they were before the erasure, never from the code under test; the files on
disk are scanned here with a reader of our own. The work runs in the
background thread beside the in-process tests (conftest.py)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from cdc_helpers import diff, truth_state
from lakehouse_cdc.simulator import TABLES, read_versions
from lakehouse_cdc.simulator.truth import batch_files

CHILD = Path(__file__).with_name("_erase_child.py")
KNOBS = {"seed": 11, "scale": 15, "batches": 1, "changes_per_batch": 40,
         "multi_change_rate": 0.2, "late_rate": 0.0, "redeliver_rate": 0.05,
         "malformed_rate": 0.05, "add_column_at_batch": 0}
SCHEMA = "er"


def _pick_subject(sim: Path) -> tuple[str, set[str]]:
    """A customer live after batch 0, with an order with lines, and changed in batch 1;
    and every order that ever belonged to it."""
    state0 = truth_state(sim, "customer_master", 0)
    orders0 = truth_state(sim, "orders", 0)
    items0 = truth_state(sim, "order_items", 0)
    ordered = {o["customer_id"] for o in orders0.values()
               if any(k[0] == o["order_id"] for k in items0)}
    changed = {v["customer_id"] for t in ("customer_master", "customer_address", "orders")
               for v in read_versions(sim, t) if v["batch"] == "1"}
    candidates = sorted((set(k[0] for k in state0) & ordered & changed), key=int)
    assert candidates, "the simulation has no customer fit to be the subject"
    subject = candidates[0]
    orders = {v["order_id"] for v in read_versions(sim, "orders") if v["customer_id"] == subject}
    return subject, orders


def _assert_truth_without_subject(dump: dict, sim: Path, batch: int, subject: str,
                                  orders: set[str]) -> None:
    """Silver equals the truth after `batch` without the subject's rows, and no
    table holds a row of the subject."""
    for table in TABLES:
        state = truth_state(sim, table, batch)
        expected = {k: v for k, v in state.items()
                    if v.get("customer_id") != subject and v.get("order_id") not in orders}
        actual = {tuple(k): v for k, v in dump["silver"][table]}
        assert actual == expected, f"{table} after batch {batch}: " + diff(expected, actual)
    for name, rows in dump["tables"].items():
        assert not [r for r in rows if _is_subject(r, subject, orders)], f"subject in {name}"


def _is_subject(row: dict, subject: str, orders: set[str]) -> bool:
    if row.get("customer_id") == subject or row.get("order_id") in orders:
        return True
    record = row.get("record")
    if record and record.startswith("{"):
        parsed = json.loads(record)
        return (str(parsed.get("customer_id")) == subject
                or str(parsed.get("order_id")) in orders)
    if record:  # a quarantined line as written: any field may be the key
        return _raw_line_of_subject(row["model_name"], record, subject, orders)
    return False


def _raw_line_of_subject(model: str, record: str, subject: str, orders: set[str]) -> bool:
    """A raw CSV line of a silver model's source holding the subject's id, or
    one of its orders' ids, as a whole field, where the source has that column
    (the simulator's schema says which)."""
    table = model.removeprefix("slv_retail__").removesuffix("_log")
    columns = {c.name for c in TABLES[table].columns}
    fields = set(next(csv.reader([record])))
    return bool(("customer_id" in columns and subject in fields)
                or ("order_id" in columns and fields & orders))


def _quarantined_line(sim: Path, batch: int, subject: str) -> tuple[str, str]:
    """The subject's full-load line of customer_master with an unknown
    operation code, for the customer_master file of `batch`: (landing path,
    line). Silver quarantines it as written."""
    def table_file(batch: int) -> tuple[str, list[str], list[list[str]]]:
        [entry] = [e for e in batch_files(sim, batch)
                   if e["table"] == "customer_master" and e["kind"] in ("load", "cdc")]
        header, *rows = csv.reader(io.StringIO((sim / entry["path"]).read_text("utf-8")))
        return entry["path"], header, rows

    _, header, rows = table_file(0)
    path, target_header, _ = table_file(batch)
    assert target_header == header
    [ours] = [r for r in rows if r[header.index("customer_id")] == subject]
    line = io.StringIO()
    csv.writer(line, lineterminator="\n").writerow(["X", *ours[1:]])
    return str(Path(*Path(path).parts[1:])), line.getvalue()


def _files_with_subject(roots: list[Path], subject: str, orders: set[str]) -> list[str]:
    """Our own scan: Parquet by column, CSV by header, JSON lines by field, gzip opened."""
    import pyarrow.parquet as pq

    hits = []
    for root in roots:
        for path in (p for p in root.rglob("*") if p.is_file()):
            name = path.name.removesuffix(".gz")
            if name.endswith(".parquet"):
                table = pq.read_table(path)
                rows = table.select([c for c in table.column_names
                                     if c in ("customer_id", "order_id")]).to_pylist()
            elif name.endswith((".csv", ".json")):
                raw = path.read_bytes()
                text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
                rows = ([json.loads(line) for line in text.splitlines() if line.strip()]
                        if name.endswith(".json") and not text.startswith("{\n")
                        else list(csv.DictReader(io.StringIO(text))))
                rows = [r for r in rows if isinstance(r, dict)]
            else:
                continue
            if any(_is_subject({k: None if v is None else str(v) for k, v in r.items()},
                               subject, orders) for r in rows):
                hits.append(str(path))
    return hits


def _child(work, home: Path, java_options: str, *args: str, kill_on: str | None = None,
           append: dict[str, list[str]] | None = None,
           pause: tuple[str, Callable[[], None]] | None = None) -> bool:
    """Run the child; True when it was killed on the line `kill_on`. On the
    line `pause[0]` it waits while `pause[1]` runs (the child is killed if
    that fails)."""
    env = {**work.env, "LAKEHOUSE_HOME": str(home), "LAKEHOUSE_SHUFFLE_PARTITIONS": "2",
           "ERASE_TEST_APPEND": json.dumps(append or {}), "LAKEHOUSE_JAVA_OPTIONS": java_options}
    env.pop("LAKEHOUSE_ERASURE_PEPPER", None)  # the key hashes are checked below
    proc = work.popen([sys.executable, str(CHILD), *args], env=env, text=True,
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, paused = [], False
    assert proc.stdout is not None and proc.stdin is not None
    for line in proc.stdout:
        out.append(line)
        if kill_on and line.startswith(kill_on):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        if pause and line.startswith(pause[0]):
            try:
                pause[1]()
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            paused = True
            proc.stdin.write("go\n")
            proc.stdin.flush()
    proc.wait(timeout=60)
    assert proc.returncode == 0, "".join(out)[-4000:]
    assert kill_on is None, f"the child ended before {kill_on!r}:\n" + "".join(out)[-3000:]
    assert paused or not pause, f"the child never printed {pause[0]!r}"
    return False


def _rows(dump: dict, table: str) -> Counter:
    return Counter(json.dumps(r, sort_keys=True) for r in dump["tables"][table])


def _expected_marts(before: dict, subject: str, orders: set[str]) -> dict[str, Counter]:
    """The two aggregate marts recomputed from the facts before the erasure,
    without the subject's orders (their rules restated from models/gold)."""
    gold = f"{SCHEMA}_gold"
    facts = [r for r in before["tables"][f"{gold}.fct_orders"] if r["order_id"] not in orders]
    country = {d["customer_sk"]: d["country"]
               for d in before["tables"][f"{SCHEMA}_dimensions.dim_customer"]}
    daily: dict[tuple, list] = defaultdict(lambda: [0, Decimal(0)])
    for f in facts:
        if f["is_cancelled"] == "false" and f["customer_sk"] in country:
            acc = daily[(f["order_date"], country[f["customer_sk"]] or "Unknown")]
            acc[0] += 1
            acc[1] += Decimal(f["order_amount"])
    product: dict[tuple, list] = defaultdict(lambda: [0, Decimal(0), set()])
    for i in before["tables"][f"{gold}.fct_order_items"]:
        if i["order_id"] in orders or i["is_cancelled"] == "true" or i["order_ts"] is None:
            continue
        acc = product[(i["product_id"], i["order_ts"][:8] + "01")]
        acc[0] += int(i["quantity"])
        acc[1] += Decimal(i["line_amount"])
        acc[2].add(i["order_id"])
    return {
        f"{gold}.mart_daily_revenue_by_country": Counter(json.dumps(
            {"order_date": d, "country": c, "order_count": str(n), "revenue": f"{r:.2f}"},
            sort_keys=True) for (d, c), (n, r) in daily.items()),
        f"{gold}.mart_product_performance": Counter(json.dumps(
            {"product_id": p, "month_start": m, "units_sold": str(u), "revenue": f"{r:.2f}",
             "order_count": str(len(o))}, sort_keys=True) for (p, m), (u, r, o) in product.items()),
    }


def _erase_killed_and_rerun(work) -> None:
    sim, tmp_path = work.simulated(**KNOBS), work.tmp_path
    jvm = work.child_java_options()  # no child here may write the class-data archive: one is killed
    subject, orders = _pick_subject(sim)
    home, landing = tmp_path / "home", tmp_path / "landing"
    before_json, after_json, later_json = (tmp_path / n for n in ("b.json", "a.json", "l.json"))
    arg = f"customer_id={subject}"

    # 1. build on batch 0, then erase and kill -9 it while it rebuilds gold
    path0, line0 = _quarantined_line(sim, 0, subject)
    assert _child(work, home, jvm, "build", str(sim), str(landing), SCHEMA, "0",
                  str(before_json), arg, kill_on="[erase] rebuilding", append={path0: [line0]})
    before = json.loads(before_json.read_text())
    quarantine = f"{SCHEMA}_silver.cdc_quarantine"
    raw0 = [r for r in before["tables"][quarantine] if r["record"] == line0.rstrip("\n")]
    assert raw0, "the subject's line was not quarantined as written"
    mtimes = {p: p.stat().st_mtime_ns for p in landing.rglob("*") if p.is_file()}
    sizes = {p: p.stat().st_size for p in mtimes}
    assert _files_with_subject([landing], subject, orders), "the subject was never landed"

    # 2. erase again: completes and proves it; once more: nothing to do. Then the
    # certificate is shown the subject's quarantined raw line, put back as it was
    # (found), and the same line with the subject's id only inside longer values
    # (not found)
    fields = next(csv.reader([raw0[0]["record"]]))
    decoy = [f"{subject}0" if f == subject else f for f in fields]
    assert subject not in decoy and any(subject in f for f in decoy)
    decoy_line = io.StringIO()
    csv.writer(decoy_line, lineterminator="").writerow(decoy)
    put_back = tmp_path / "put_back.json"
    put_back.write_text(json.dumps([
        {k: raw0[0][k] for k in ("model_name", "file_path", "reason", "record")},
        {"model_name": raw0[0]["model_name"], "record": decoy_line.getvalue()}]))

    def erased() -> None:
        """Run while the child waits, before the later batch lands."""
        after = json.loads(after_json.read_text())
        # the put-back line is found in the table and, on disk, in the quarantine's data file
        put_found, decoy_found = after["found"]
        in_files = [f for f in put_found if f.startswith("file ")]
        assert sorted(put_found) == sorted([*in_files, f"table {quarantine}"]), put_found
        assert len(in_files) == 1 and "/cdc_quarantine/" in in_files[0], put_found
        assert in_files[0].endswith("(a quarantined record)"), put_found
        assert decoy_found == [], decoy_found
        # the killed erasure held the build lock (on here, as on a shared catalog) and a
        # build was refused; the re-run took the lock back and released it at its end
        [held] = after["lock_after_kill"]
        assert held["holder"].startswith("erase-"), held
        assert "lakehouse lock busy" in after["build_refused"], after["build_refused"][-2000:]
        assert [r["holder"] for r in after["tables"][f"{SCHEMA}_ops.lakehouse_lock"]] == [None]
        first, second = after["runs"]
        assert first["clean"] and second["clean"] and first["files"] > 0 and first["tables"] > 0
        assert first["rewritten"] > 0, "the killed run had not rewritten landing files yet"
        assert (second["removed"], second["rewritten"]) == (0, 0), second
        data_snapshots = {t: n for t, n in second["snapshots"].items() if "_ops." not in t}
        assert data_snapshots == {t: n for t, n in first["snapshots"].items() if "_ops." not in t}

        _assert_truth_without_subject(after, sim, 0, subject, orders)
        assert not _files_with_subject([home / "warehouse", landing], subject, orders)
        assert not [r for r in after["tables"][quarantine] if r["record"] == raw0[0]["record"]]

        # rewritten landing files kept their modification time; some did shrink
        assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes
        assert any(p.stat().st_size < sizes[p] for p in mtimes)

        # everything else is as it was: other subjects' rows untouched, marts recomputed
        marts = _expected_marts(before, subject, orders)
        for name in before["tables"]:
            if name.split(".")[0] not in (f"{SCHEMA}_dimensions", f"{SCHEMA}_gold",
                                          f"{SCHEMA}_snapshots"):
                continue
            kept = marts.get(name) or Counter(json.dumps(r, sort_keys=True)
                                              for r in before["tables"][name]
                                              if not _is_subject(r, subject, orders))
            assert _rows(after, name) == kept, f"{name} changed beyond the subject"

        [ledger] = after["tables"][f"{SCHEMA}_ops.erasure_ledger"]
        assert (ledger["status"], ledger["step"], ledger["requested_by"]) == (
            "completed", "certified", "test")
        assert int(ledger["rows_removed"]) > 0 and f"{SCHEMA}_silver.slv_retail__orders" in (
            ledger["tables_touched"])
        # hashes, not values
        assert ledger["subject_key"] == "customer_id" and len(ledger["subject_hash"]) == 64
        keys = after["tables"][f"{SCHEMA}_ops.erasure_keys"]
        assert {k["key_name"] for k in keys} == {"customer_id", "order_id"}
        # (no pepper set here: the hash is sha256("order_id=<id>"))
        landed_orders = {v["order_id"] for v in read_versions(sim, "orders")
                         if v["customer_id"] == subject and v["batch"] == "0"}
        assert {hashlib.sha256(f"order_id={o}".encode()).hexdigest() for o in landed_orders} <= {
            k["key_hash"] for k in keys if k["key_name"] == "order_id"}

    # 3. then, in the same JVM, a later batch carries the subject's changes
    # (one of them a line quarantined as written): built, and removed again
    path1, line1 = _quarantined_line(sim, 1, subject)
    _child(work, home, jvm, "erase-twice", str(landing), SCHEMA, arg, str(after_json),
           str(put_back), str(sim), "1", str(later_json), append={path1: [line1]},
           pause=("[child] erased", erased))
    later = json.loads(later_json.read_text())
    _assert_truth_without_subject(later, sim, 1, subject, orders)
    # its raw line was quarantined by the build and removed by the post-hook
    assert sum(int(e["rows_removed"]) for e in later["tables"][f"{SCHEMA}_ops.erasure_events"]
               if e["origin"] == "post-hook" and e["relation"] == quarantine) > 0
    blocked = [e for e in later["tables"][f"{SCHEMA}_ops.erasure_events"]
               if e["origin"] == "post-hook"]
    assert sum(int(e["rows_removed"]) for e in blocked) > 0, "nothing was counted as blocked"
    # the rewritten files were not read again as new files: each file applied
    # once per model, each rewritten version logged as erased with its size
    # (a file is known by path, time and size), the batch-0 ones that shrank too
    file_log = later["tables"][f"{SCHEMA}_silver.cdc_file_log"]
    logged = Counter((r["model_name"], r["file_path"]) for r in file_log
                     if r["status"] != "erased")
    assert max(logged.values()) == 1, [k for k, n in logged.items() if n > 1]
    erased = {(r["model_name"], Path(unquote(urlparse(r["file_path"]).path))): int(r["file_size"])
              for r in file_log if r["status"] == "erased"}
    assert {(model, path) for model, path in erased} <= set(
        (r["model_name"], Path(unquote(urlparse(r["file_path"]).path))) for r in file_log
        if r["status"] == "applied")
    assert all(path.stat().st_size == size for (_, path), size in erased.items()), erased
    shrunk = {p for p in mtimes if p.stat().st_size < sizes[p]}
    assert shrunk and shrunk <= {path for _, path in erased}, (shrunk, erased)


@pytest.mark.background(work=_erase_killed_and_rerun)
def test_erase_proven_idempotent_survives_kill_and_blocks_resurrection(background):
    background()


def test_erase_refuses_a_target_it_cannot_reach(monkeypatch, capsys):
    """On the cluster target erase's Spark would read this process's catalog,
    not the cluster's: it refuses before anything, saying so."""
    from lakehouse_cdc.erase import main

    monkeypatch.setenv("DBT_TARGET", "cluster")
    assert main(["--subject", "customer_id=42"]) == 1
    err = capsys.readouterr().err
    assert "DBT_TARGET=cluster" in err and "nothing was changed" in err, err
