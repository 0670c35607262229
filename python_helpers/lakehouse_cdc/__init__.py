"""Python helpers for the lakehouse CDC dbt project."""

from pathlib import Path

#: Root of the dbt project (the repository checkout).
PROJECT_ROOT = Path(__file__).resolve().parents[2]

__all__ = ["PROJECT_ROOT"]
