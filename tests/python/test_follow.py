"""`lakehouse follow`, as a process of its own: each file landed while it
runs is applied to silver and the SCD2 history and printed with its latency;
killed with SIGKILL while it applies a batch, a new `follow` resumes and
leaves silver, the SCD2 dimension and the file log equal to the truth. It
runs in the background thread beside the in-process tests (conftest.py), in
its own JVMs and metastore (Derby admits one process). In process, with the
session's JVM: a failed `--maintain-every` maintenance does not stop it."""

from __future__ import annotations

import gzip
import json
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from cdc_helpers import diff, silver_state, truth_state
from lakehouse_cdc.simulator import land_batch
from lakehouse_cdc.simulator.truth import batch_files
from scd_truth import full_history
from test_dimensions import _rows as dimension_rows

CRASH_CHILD = Path(__file__).with_name("_crash_child.py")
KNOBS = {"seed": 8, "scale": 20, "batches": 2, "changes_per_batch": 30,
         "multi_change_rate": 0.3, "late_rate": 0.1}
SELECT = "slv_retail__product"
FILE_LINE = re.compile(r"^\[follow\] (retail/product/\S+): applied \d+ rows.*, visible "
                       r"([0-9.]+) s after landing$")


#: tables the resuming follower must not maintain: another table in the
#: product model's schema, one whose name begins with the model's, and one
#: named as a CDC log in another layer
DECOYS = ("follow_silver.decoy", "follow_silver.slv_retail__product_archive",
          "follow_gold.cdc_file_log")
FOLLOW_ARGS = ["--schema", "follow", "--select", SELECT, "--interval", "0.2", "--settle", "0.5"]


def _child(work, home: Path, java_options: str, args: list[str],
           **extra_env: str) -> subprocess.Popen:
    env = {**work.env, "LAKEHOUSE_HOME": str(home), "LAKEHOUSE_SHUFFLE_PARTITIONS": "2",
           "LAKEHOUSE_JAVA_OPTIONS": java_options, **extra_env}
    return work.popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class _Lines:
    """The child's output lines as they come (a thread reads them)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.seen, self.lines = proc, [], queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, pattern: str, timeout: float = 600) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            self.seen.append(line)
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line like {pattern!r}; output:\n" + "\n".join(self.seen[-60:]))


def _product_files(sim: Path, batch: int) -> set[str]:
    return {"retail/product/" + Path(e["path"]).name for e in batch_files(sim, batch)
            if e["table"] == "product"}


def _followed_killed_and_resumed(work) -> None:
    sim = work.simulated(**KNOBS)
    home, landing = work.tmp_path / "home", work.tmp_path / "landing"
    land_batch(sim, landing, 0)
    exe = shutil.which("lakehouse", path=str(Path(sys.executable).parent)) or "lakehouse"
    first = _child(work, home, work.child_java_options(write_archive=True),
                   [exe, "follow", "--landing", str(landing), *FOLLOW_ARGS])
    out = _Lines(first)
    try:
        out.until(r"^\[follow\] run 1 took")  # the catch-up run: the full load
        land_batch(sim, landing, 1)
        reported = {}
        while set(reported) != _product_files(sim, 1):
            line = out.until(r"^\[follow\] (retail/|run \d+ took)")
            if match := FILE_LINE.match(line):
                reported[match.group(1)] = float(match.group(2))
        assert all(0 < seconds < 600 for seconds in reported.values()), reported
        # batch 2 lands; once a run has started on it, SIGKILL at a random moment
        land_batch(sim, landing, 2)
        out.until(r"new file\(s\) in dms_retail\.product")
        time.sleep(random.uniform(0, 6))
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    assert first.returncode == -9, "\n".join(out.seen[-40:])

    # a new follower catches up and stops once idle; then the tables, from the
    # same JVM (the test's child runs `lakehouse follow` in-process, then dumps)
    dump = work.tmp_path / "state.json"
    second = _child(work, home, work.child_java_options(),
                    [sys.executable, str(CRASH_CHILD), "follow", str(dump),
                     "--landing", str(landing), *FOLLOW_ARGS, "--until-idle", "1",
                     "--maintain-every", "0"],
                    LAKEHOUSE_TEST_DECOYS=" ".join(DECOYS))
    again = _Lines(second)
    again.until(r"^\[follow\] catching up")
    maintaining = again.until(r"^\[follow\] maintaining \d+ table\(s\) the runs wrote", 900)
    again.until(r"file\(s\) applied; landing to visible|^\[follow\] no file applied", 900)
    assert second.wait(timeout=300) == 0, "\n".join(again.seen[-40:])
    state = json.loads(dump.read_text())
    actual = {tuple(k): v for k, v in state["product"]}
    expected = truth_state(sim, "product", 2)
    assert actual == expected, "product: " + diff(expected, actual)
    actual = dimension_rows(state["dim_product"], "dim_product")
    expected = full_history(sim, "dim_product", 2)
    assert actual == expected, "dim_product: " + diff(expected, actual)
    # every product file applied exactly once by each followed model, all rows accounted for
    log = [entry for entry in state["file_log"] if entry[0] in SELECT.split()]
    once = Counter((model, path) for model, path, *_ in log)
    assert max(once.values()) == 1, [k for k, n in once.items() if n > 1]
    for _model, path, status, in_file, read, applied, superseded, quarantined in log:
        assert status == "applied" and in_file == read == applied + superseded + quarantined, path
    landed = _product_files(sim, 0) | _product_files(sim, 1) | _product_files(sim, 2)
    for model in SELECT.split():
        logged = {path.split("/landing/", 1)[1] for m, path, *_ in log if m == model}
        assert logged == landed, (model, sorted(landed ^ logged))
    # --maintain-every 0: once idle after catching up, the tables its runs wrote
    # were maintained (the truth above is read after it), and only those
    audited = {row["table_name"]: row for row in state["maintenance"]}
    assert {"follow_silver.slv_retail__product", "follow_silver.cdc_file_log",
            "follow_dimensions.dim_product"} <= set(audited), sorted(audited)
    assert not set(DECOYS) & set(audited), sorted(audited)
    assert re.search(r"maintaining (\d+) ", maintaining).group(1) == str(len(audited)), maintaining
    assert all(re.fullmatch(r"follow_(silver\.(slv_retail__product|slv_retail__product__cdc_\w+|"
                            r"cdc_\w+)|dimensions\.dim_product)", name) for name in audited), \
        sorted(audited)
    product = audited["follow_silver.slv_retail__product"]
    assert len({row["run_id"] for row in state["maintenance"]}) == 1, state["maintenance"]
    assert product["delete_files_after"] == 0 and (
        product["data_files_after"] < product["data_files_before"]), product
    work.note(f"follow: batch 1 landing to visible {sorted(reported.values())} s; "
              f"maintained {len(audited)} tables, product's data files "
              f"{product['data_files_before']} -> {product['data_files_after']}, delete files "
              f"{product['delete_files_before']} -> 0")


@pytest.mark.background(work=_followed_killed_and_resumed)
def test_follow_applies_each_landed_file_and_resumes_after_kill(background):
    background()


def test_a_failed_maintenance_is_reported_and_following_goes_on(spark, simulated, schema,
                                                                 tmp_path, capsys):
    """`--maintain-every`: a maintenance that fails (here its policy lacks
    every setting) is printed with dbt's error, writes no audit row and does
    not stop the follower: the next file is applied as before. Where builds
    take the build lock, one that fails after taking it leaves it free; one
    that succeeds and then cannot release the lock is reported done, with
    its rows and how to release the lock, and the lock is released before
    the follower's next run."""
    from lakehouse_cdc.dbt_runner import LockNotReleased
    from lakehouse_cdc.follow import Follower, FollowOptions

    sim = simulated(**KNOBS)
    landing = tmp_path / "landing"
    land_batch(sim, landing, 0)
    follower = Follower(spark, FollowOptions(
        schema=schema, select=SELECT, downstream="none", settle=0.0, maintain_every=0,
        vars={"landing_root": str(landing), "maintenance": {"default": {}}},
        target_path=tmp_path / "target"))
    follower.cycle(first=True)
    capsys.readouterr()
    assert follower.maintain_if_due() == []
    out = capsys.readouterr().out
    assert "maintenance failed" in out and "has no 'min_small_files'" in out, out
    audit = f"{schema}_ops.maintenance_audit"
    assert not spark.catalog.tableExists(audit) or spark.table(audit).count() == 0
    land_batch(sim, landing, 1)
    applied = follower.cycle()
    assert {"retail/product/" + Path(a.path).name for a in applied} == _product_files(sim, 1)
    assert {a.status for a in applied} == {"applied"}, applied
    actual, expected = silver_state(spark, schema, "product"), truth_state(sim, "product", 1)
    assert actual == expected, diff(expected, actual)

    # with the build lock on, failing after the lock is taken (its audit row
    # cannot be written: an audit table of another shape): the lock is free
    follower.options.vars = {"landing_root": str(landing), "lakehouse_build_lock": True}
    spark.sql(f"create schema if not exists {schema}_ops")
    spark.sql(f"drop table if exists {audit}")
    spark.sql(f"create table {audit} (run_id string) using iceberg")
    capsys.readouterr()
    assert follower.maintain_if_due() == []
    out = capsys.readouterr().out
    assert "maintenance failed" in out and "INSERT_COLUMN_ARITY_MISMATCH" in out, out
    holders = [r.holder for r in spark.sql(f"select holder from {schema}_ops.lakehouse_lock")
               .collect()]
    assert holders == [None], holders
    spark.sql(f"drop table {audit}")

    # a maintenance that succeeds and then cannot release the lock (its
    # table renames a column the release writes, between the maintenance and
    # the release): done, its rows reported, not "maintenance failed"
    dbt = follower._dbt

    def breaking_the_release(args, manifest=None, vars=None):
        if args[:2] == ["run-operation", "lakehouse_lock_release"]:
            spark.sql(f"alter table {schema}_ops.lakehouse_lock rename column purpose to gone")
        return dbt(args, manifest=manifest, vars=vars)

    follower._dbt = breaking_the_release
    capsys.readouterr()
    rows = follower.maintain_if_due()
    out = capsys.readouterr().out
    product = f"{schema}_silver.slv_retail__product"
    assert product in {r["table_name"] for r in rows}, rows
    assert "maintenance failed" not in out, out
    assert "maintenance done, but the build lock held by follow-maintain-" in out, out
    assert "It is tried again before the next run" in out, out
    assert "lakehouse_lock_release --args '{holder: follow-maintain-" in out, out
    assert follower.unmaintained == set()
    lock = f"{schema}_ops.lakehouse_lock"
    holders = [r.holder for r in spark.sql(f"select holder from {lock}").collect()]
    assert holders == [rows[0]["run_id"]], holders
    # the follower's next run would find the lock held: it releases it
    # first, and stops (the run not begun) while it still cannot
    follower._dbt = dbt
    with pytest.raises(LockNotReleased, match="lakehouse_lock_release --args"):
        follower.cycle(first=True)
    assert "catching up (" not in capsys.readouterr().out
    spark.sql(f"alter table {lock} rename column gone to purpose")
    assert follower.cycle(first=True) == []  # (nothing new: a catch-up run)
    out = capsys.readouterr().out
    assert f"the build lock held by {rows[0]['run_id']} is released" in out, out
    assert [r.holder for r in spark.sql(f"select holder from {lock}").collect()] == [None]


def test_a_gzip_file_still_being_copied_is_waited_for(spark, simulated, schema, tmp_path,
                                                      capsys):
    """A gzip file that lands cut short (a copy in progress) would fail any
    run of its source's model on Spark's `EOFException`, which names no
    file (a run reads every file its model has not logged). The follower
    says which file it waits for and runs nothing of that source, neither
    for the source's other new files nor in a new follower's catch-up run;
    once the file is whole every file is applied, and silver equals the
    truth."""
    from lakehouse_cdc.follow import Follower, FollowOptions

    sim = simulated(**KNOBS)
    landing = tmp_path / "landing"
    land_batch(sim, landing, 0)
    options = FollowOptions(schema=schema, select=SELECT, downstream="none", settle=0.0,
                            vars={"landing_root": str(landing)}, target_path=tmp_path / "target")
    follower = Follower(spark, options)
    follower.cycle(first=True)
    land_batch(sim, landing, 1)
    land_batch(sim, landing, 2)
    names = sorted(_product_files(sim, 1) | _product_files(sim, 2))
    assert len(names) > 1, names  # files beside the cut one
    plain = landing / names[-1]
    whole = gzip.compress(plain.read_bytes(), mtime=0)
    zipped = plain.with_name(plain.name + ".gz")
    plain.unlink()
    zipped.write_bytes(whole[: len(whole) // 2])
    before = truth_state(sim, "product", 0)
    # the running follower's next turn, then a new follower's catch-up run
    # (put off: it would run every model)
    second = Follower(spark, options)
    for turn, first in ((follower, False), (second, True)):
        capsys.readouterr()
        assert turn.cycle(first=first) == []
        out = capsys.readouterr().out
        assert f"{zipped}: the gzip file ends before its end-of-stream marker" in out, out
        assert "dbt run" not in out, out
        assert ("catching up waits until the gzip file(s) being copied are whole" in out) == first
        actual = silver_state(spark, schema, "product")
        assert actual == before, diff(before, actual)
    for turn in (follower, second):  # still cut: nothing run, and said once per follower
        assert turn.cycle() == []
    assert "end-of-stream marker" not in capsys.readouterr().out
    zipped.write_bytes(whole)
    applied = follower.cycle()
    assert {"retail/product/" + Path(a.path).name for a in applied} == {
        *names[:-1], "retail/product/" + zipped.name}, applied
    assert {a.status for a in applied} == {"applied"}, applied
    actual, expected = silver_state(spark, schema, "product"), truth_state(sim, "product", 2)
    assert actual == expected, diff(expected, actual)
    # the new follower's catch-up runs once the file is whole (nothing left to apply)
    assert second.cycle() == []
    assert "catching up (" in capsys.readouterr().out
