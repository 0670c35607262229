"""A dbt process killed (SIGKILL) in the middle of the CDC apply, then run
again, leaves silver equal to the truth: the same as an uninterrupted run.

The children run in their own JVM with their own metastore (Derby admits one
process), so this test never touches the session's warehouse."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cdc_helpers import diff, truth_state
from lakehouse_cdc.simulator import TABLES

CHILD = Path(__file__).with_name("_crash_child.py")
KNOBS = {"seed": 3, "scale": 40, "batches": 2, "changes_per_batch": 40,
         "multi_change_rate": 0.3, "late_rate": 0.1}


def _child(home: Path, *args: str, kill_on: str | None = None, log: Path | None = None):
    env = {**os.environ, "LAKEHOUSE_HOME": str(home), "LAKEHOUSE_SHUFFLE_PARTITIONS": "2"}
    proc = subprocess.Popen([sys.executable, str(CHILD), *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if kill_on is None:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
        return False
    deadline = time.time() + 900
    while time.time() < deadline and proc.poll() is None:
        if log and log.exists() and kill_on in log.read_text(errors="replace"):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.05)
    proc.communicate(timeout=60)
    raise AssertionError(f"child ended (rc {proc.returncode}) before reaching {kill_on!r}")


def test_killed_mid_apply_then_rerun_equals_truth(simulated, tmp_path):
    sim = simulated(**KNOBS)
    home, landing, schema = tmp_path / "home", tmp_path / "landing", "crash"
    logs = tmp_path / "logs"
    common = [str(sim), str(landing), schema]
    _child(home, "build", *common, str(tmp_path / "logs0"), "0")

    # crash 1: during the tombstone merge of order_items (hard deletes), with batch 1
    # landed (a run commits to the tombstones only when the batch's last change
    # of some key is a delete: order_items' batch 1 has one, orders' has none)
    kill1 = f"merge into {schema}_silver.slv_retail__order_items__cdc_tombstones"
    assert _child(home, "build", *common, str(logs / "1"), "1", kill_on=kill1,
                  log=logs / "1" / "dbt.log")
    # crash 2: the re-run, during the main merge of order_items, with batch 2 landed too
    kill2 = f"merge into {schema}_silver.slv_retail__order_items as t"
    assert _child(home, "build", *common, str(logs / "2"), "2", kill_on=kill2,
                  log=logs / "2" / "dbt.log")
    # and the re-run that finishes
    _child(home, "build", *common, str(logs / "3"))
    out = tmp_path / "state.json"
    _child(home, "dump", schema, str(out))

    state = json.loads(out.read_text())
    for table in TABLES:
        actual = {tuple(k): v for k, v in state[table]}
        expected = truth_state(sim, table, KNOBS["batches"])
        assert actual == expected, f"{table}: " + diff(expected, actual)
