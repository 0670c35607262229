"""Drive dbt in-process, so one Python process keeps one Spark session.

dbt-spark's `session` method calls `SparkSession.builder.getOrCreate()`:
every dbt invocation made through :func:`run_dbt` after
:func:`lakehouse_cdc.spark.get_spark` reuses the same JVM.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from lakehouse_cdc import PROJECT_ROOT


class DbtError(RuntimeError):
    """A dbt invocation failed; the message carries dbt's own error lines."""


@contextmanager
def _env(overrides: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _failures(result: Any) -> str:
    lines = []
    if result.exception is not None:
        lines.append(str(result.exception))
    for node in getattr(result.result, "results", None) or []:
        status = str(getattr(node, "status", ""))
        if status in ("error", "fail", "runtime error"):
            name = getattr(getattr(node, "node", None), "unique_id", "operation")
            lines.append(f"{name}: {status}: {node.message}")
    return "\n".join(lines) or "dbt reported failure without a message"


def run_dbt(
    args: Sequence[str],
    *,
    project_dir: Path | str = PROJECT_ROOT,
    schema: str | None = None,
    vars: dict[str, Any] | None = None,
    target_path: Path | str | None = None,
    expect_success: bool = True,
    quiet: bool = True,
    manifest: Any = None,
) -> Any:
    """Invoke dbt with `args`; return dbt's result (raise DbtError on failure).
    `manifest`: a project already parsed (the result of `parse`, with the same
    vars), which dbt then uses instead of parsing the project again."""
    from dbt.cli.main import dbtRunner

    cli = list(args)
    cli += ["--project-dir", str(project_dir)]
    if "--profiles-dir" not in cli:
        profiles = os.environ.get("DBT_PROFILES_DIR", str(PROJECT_ROOT / "profiles"))
        cli += ["--profiles-dir", profiles]
    if vars:
        cli += ["--vars", yaml.safe_dump(vars, default_flow_style=True).strip()]
    if target_path is not None:
        cli += ["--target-path", str(target_path)]
    if quiet and "--quiet" not in cli and "-q" not in cli:
        cli = ["--quiet", *cli]
    overrides = {"DO_NOT_TRACK": "1"}
    if schema is not None:
        overrides["LAKEHOUSE_SCHEMA"] = schema
    with _env(overrides):
        result = dbtRunner(manifest=manifest).invoke(cli)
    if expect_success and not result.success:
        raise DbtError(f"dbt {' '.join(args)} failed:\n{_failures(result)}")
    return result
