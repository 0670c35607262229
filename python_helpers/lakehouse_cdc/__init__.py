"""Python helpers for the lakehouse CDC dbt project."""

import shutil
from pathlib import Path

#: Root of the dbt project (the repository checkout).
PROJECT_ROOT = Path(__file__).resolve().parents[2]

#: What a copy of the dbt project needs besides dbt_project.yml
PROJECT_FOLDERS = ("models", "macros", "snapshots", "seeds", "tests/dbt")

#: What a copy without the project's own models needs besides dbt_project.yml
MACRO_FOLDERS = ("macros", "models/docs")


def copy_project(dst: Path, models: bool = True) -> Path:
    """This dbt project's files (its own models included) copied into `dst`,
    for a project to edit or grow (tests, the many-sources benchmark).
    `models=False`: its macros, doc blocks and dbt_project.yml only, for a
    project that brings its own models; dbt parses it in about half the time
    of the whole project (1.5-1.8 s against 3.1, measured 2026-11-28)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FOLDERS if models else MACRO_FOLDERS:
        if (PROJECT_ROOT / name).exists():
            shutil.copytree(PROJECT_ROOT / name, dst / name)
    shutil.copy(PROJECT_ROOT / "dbt_project.yml", dst / "dbt_project.yml")
    return dst


__all__ = ["MACRO_FOLDERS", "PROJECT_FOLDERS", "PROJECT_ROOT", "copy_project"]
