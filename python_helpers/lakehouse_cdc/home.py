"""Where the lakehouse keeps its state ($LAKEHOUSE_HOME, default .lakehouse/)."""

from __future__ import annotations

import os
from pathlib import Path

from lakehouse_cdc import PROJECT_ROOT


def lakehouse_home() -> Path:
    """$LAKEHOUSE_HOME resolved (and exported, so dbt's profile sees it)."""
    home = Path(os.environ.get("LAKEHOUSE_HOME", PROJECT_ROOT / ".lakehouse")).resolve()
    os.environ["LAKEHOUSE_HOME"] = str(home)
    return home
