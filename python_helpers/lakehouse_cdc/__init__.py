"""Python helpers for the lakehouse CDC dbt project."""

import shutil
from pathlib import Path

#: Root of the dbt project (the repository checkout).
PROJECT_ROOT = Path(__file__).resolve().parents[2]

#: What a copy of the dbt project needs besides dbt_project.yml
PROJECT_FOLDERS = ("models", "macros", "snapshots", "seeds", "tests/dbt")


def copy_project(dst: Path) -> Path:
    """This dbt project's files (its own models included) copied into `dst`,
    for a project to edit or grow (tests, the many-sources benchmark)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FOLDERS:
        if (PROJECT_ROOT / name).exists():
            shutil.copytree(PROJECT_ROOT / name, dst / name)
    shutil.copy(PROJECT_ROOT / "dbt_project.yml", dst / "dbt_project.yml")
    return dst


__all__ = ["PROJECT_FOLDERS", "PROJECT_ROOT", "copy_project"]
