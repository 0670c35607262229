"""Lint gates: ruff over the Python helpers, sqlfluff over models and snapshots."""

from __future__ import annotations

import subprocess
import sys

from lakehouse_cdc import PROJECT_ROOT


def test_ruff_clean():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "python_helpers", "tests/python"],
        cwd=PROJECT_ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sqlfluff_clean():
    paths = [p for p in ("models", "snapshots") if (PROJECT_ROOT / p).is_dir()]
    assert "models" in paths
    proc = subprocess.run(
        [sys.executable, "-m", "sqlfluff", "lint", *paths, "--disable-progress-bar"],
        cwd=PROJECT_ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


def test_sqlfluff_config_flags_bad_style(tmp_path):
    """The lint gate can fail: upper-case keywords and a missing alias are flagged."""
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT a, b + 1 FROM {{ ref('x') }}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sqlfluff", "lint", str(bad), "--config",
         str(PROJECT_ROOT / ".sqlfluff"), "--disable-progress-bar"],
        cwd=PROJECT_ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 1, proc.stdout
    assert "CP01" in proc.stdout
