"""One Spark session, configured exactly as dbt's `local` profile says.

`profiles/profiles.yml` is the single source of the Spark settings: this
module renders it (only `env_var` is needed) so that a Python process that
also drives dbt in-process (tests, `lakehouse run`) starts the JVM once with
the very settings dbt-spark's session method would use.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jinja2
import yaml

from lakehouse_cdc import PROJECT_ROOT

PROFILE_NAME = "lakehouse_cdc"


def _env_var(name: str, default: str | None = None) -> str:
    if name in os.environ:
        return os.environ[name]
    if default is None:
        raise KeyError(f"environment variable {name} is required by profiles.yml")
    return default


def load_profile_output(target: str = "local", profiles_dir: Path | None = None) -> dict[str, Any]:
    """The rendered output `target` of the project's profile."""
    profiles_dir = profiles_dir or Path(
        os.environ.get("DBT_PROFILES_DIR", PROJECT_ROOT / "profiles")
    )
    raw = yaml.safe_load((profiles_dir / "profiles.yml").read_text())
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.globals["env_var"] = _env_var
    env.filters["as_number"] = lambda v: int(v)

    def render(value: Any) -> Any:
        if isinstance(value, str):
            return env.from_string(value).render()
        if isinstance(value, dict):
            return {k: render(v) for k, v in value.items()}
        if isinstance(value, list):
            return [render(v) for v in value]
        return value

    return render(raw[PROFILE_NAME]["outputs"][target])


def spark_conf(target: str = "local") -> dict[str, str]:
    params = load_profile_output(target).get("server_side_parameters", {})
    return {k: str(v) for k, v in params.items() if str(v) != ""}


def get_spark(target: str = "local"):
    """Return the process's SparkSession, creating it from the profile."""
    from pyspark.sql import SparkSession

    conf = spark_conf(target)
    home = Path(os.environ.get("LAKEHOUSE_HOME", ".lakehouse"))
    home.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("LAKEHOUSE_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def not_on_local_target(command: str, why: str) -> str | None:
    """Why `command`, which runs on the local target only, refuses the
    target DBT_TARGET names; None on the local target."""
    target = os.environ.get("DBT_TARGET", "local")
    if target == "local":
        return None
    return (f"DBT_TARGET={target}: {command} runs on the local target only ({why}); nothing was "
            f"changed. Unset DBT_TARGET to run it on the embedded warehouse.")
