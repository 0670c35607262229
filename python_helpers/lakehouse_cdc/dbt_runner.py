"""Drive dbt in-process, so one Python process keeps one Spark session.

dbt-spark's `session` method calls `SparkSession.builder.getOrCreate()`:
every dbt invocation made through :func:`run_dbt` after
:func:`lakehouse_cdc.spark.get_spark` reuses the same JVM. Its statements
run under the profile's settings, applied once per invocation and again after
a statement that changes one (:class:`_ProfileSettings`), not before each;
a setting a statement changed in an earlier invocation is undone before the
next one begins, as a new dbt process would start without it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from lakehouse_cdc import PROJECT_ROOT

#: a statement that changes a session setting: Spark's SET and RESET (after
#: the comments dbt puts first)
_CHANGES_SETTINGS = re.compile(r"\s*(?:/\*.*?\*/\s*)*(?:set|reset)\b", re.IGNORECASE | re.DOTALL)
#: a SET of a value (`set <key>=<value>`), and the key it sets
_SETS_VALUE = re.compile(r"\s*(?:/\*.*?\*/\s*)*set\s+([^\s=]+)\s*=", re.IGNORECASE | re.DOTALL)


class _ProfileSettings:
    """The Spark session whose settings are the profile's, as dbt-spark's
    `session` cursor would make them, or None until they are applied again.

    dbt-spark's cursor builds a `SparkSession.builder` with every one of the
    profile's settings before each statement, and `getOrCreate` sets them all
    on the running session again: 8.4-8.8 ms per statement against 3.3-3.4 ms
    for the statement alone (measured 2026-11-28 on the 2-core machine,
    `select 1`, 300 times), about 0.4 s of a CDC model's 75-statement run.
    Here they are applied at the start of each dbt invocation and again after
    each statement that changes a setting (SET, RESET), the only way a dbt
    statement changes one, so every statement still runs under the profile's
    settings. A setting changed from Python during an invocation (not by dbt)
    lasts until that invocation ends, not until its next statement.

    A key a statement set (`set <key>=<value>`) is reset when the next
    invocation begins (:meth:`begin`): a macro that sets one for a statement
    and resets it after may fail in between (a CDC run's bloom-filter
    settings around its MERGE), and a new dbt process would not inherit it.
    Settings changed from Python are left as they are."""

    session: Any = None
    installed = False
    #: the session statements ran in, kept across invocations
    last: Any = None
    #: keys statements set since the invocation began
    changed: set[str] = set()

    @classmethod
    def begin(cls) -> None:
        """Before an invocation: the keys earlier statements set are reset,
        and the profile's settings are applied again at the first statement."""
        if cls.changed and cls.last is not None and cls.last.sparkContext._jsc is not None:
            for key in sorted(cls.changed):
                cls.last.conf.unset(key)
        cls.changed = set()
        cls.session = None

    @classmethod
    def install(cls) -> None:
        """Replace dbt-spark's `Cursor.execute`, once per process, when this
        module is imported: code that wraps it afterwards (the crash test's
        kill points, a profiler) then wraps this one."""
        from dbt.adapters.spark import session as spark_session

        if cls.installed:
            return
        cls.installed = True

        def execute(cursor: Any, sql: str, *parameters: Any) -> None:
            from dbt_common.exceptions import DbtRuntimeError
            from pyspark.sql import SparkSession
            from pyspark.sql.utils import AnalysisException

            if parameters:
                sql = sql % parameters
            if cls.session is None or cls.session.sparkContext._jsc is None:
                builder = SparkSession.builder.enableHiveSupport()
                for key, value in cursor.server_side_parameters.items():
                    builder = builder.config(key, value)
                cls.session = cls.last = builder.getOrCreate()
            try:
                cursor._df = cls.session.sql(sql)
            except AnalysisException as exc:
                raise DbtRuntimeError(str(exc)) from exc
            finally:
                if _CHANGES_SETTINGS.match(sql):
                    cls.session = None
                    setting = _SETS_VALUE.match(sql)
                    if setting:
                        cls.changed.add(setting.group(1))

        execute._lakehouse = True  # type: ignore[attr-defined]
        spark_session.Cursor.execute = execute


_ProfileSettings.install()


class DbtError(RuntimeError):
    """A dbt invocation failed; the message carries dbt's own error lines."""


class LockNotReleased(DbtError):
    """The work done under the build lock succeeded, but releasing the lock
    failed: the message says how to release it by hand."""


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


#: the events by which dbt reports a failed run-operation; its result's
#: message is None, so the error is taken from them
_OPERATION_ERRORS = ("RunningOperationCaughtError", "RunningOperationUncaughtError")


def _failures(result: Any, operation_errors: list[str]) -> str:
    lines = []
    if result.exception is not None:
        lines.append(str(result.exception))
    for node in getattr(result.result, "results", None) or []:
        status = str(getattr(node, "status", ""))
        if status in ("error", "fail", "runtime error"):
            name = getattr(getattr(node, "node", None), "unique_id", "operation")
            message = node.message
            if message is None and operation_errors:
                message = "\n".join(operation_errors)
            lines.append(f"{name}: {status}: {message}")
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
    """Invoke dbt with `args`; return dbt's result (raise DbtError on failure,
    KeyboardInterrupt when Ctrl-C interrupted it).
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
    _ProfileSettings.begin()  # settings changed since the last invocation are undone
    operation_errors: list[str] = []

    def keep_operation_error(event: Any) -> None:
        if event.info.name in _OPERATION_ERRORS:
            operation_errors.append(event.data.exc)

    with _env(overrides):
        result = dbtRunner(manifest=manifest, callbacks=[keep_operation_error]).invoke(cli)
    if isinstance(result.exception, KeyboardInterrupt):
        # dbt cancelled its statements and returned a failure: the caller
        # stops as interrupted (exit 130), not as a failed run
        raise result.exception
    if expect_success and not result.success:
        raise DbtError(f"dbt {' '.join(args)} failed:\n{_failures(result, operation_errors)}")
    return result
