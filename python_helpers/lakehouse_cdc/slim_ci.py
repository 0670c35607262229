"""`lakehouse ci --base <git ref>`: slim CI for a pull request.

Builds (models, snapshots, seeds, tests) only what this branch changed and
everything downstream of it, `state:modified+`, in a schema of its own
(`ci_<branch>` by default: ci_<branch>_silver, ci_<branch>_gold, ...), and
reads every other model from the base's tables (`--defer`). The schemas are
dropped afterwards (keep them with --keep).

Two manifests of the base are made by `dbt parse` of `git archive <ref>`:
one in the CI schema, to compare with (so the sources, whose schema follows
the target, are not all "modified"), and one in the production schema
(`--prod-schema`), whose relations unselected refs resolve to. `--state DIR`
gives the production run's own target folder instead of the second parse.
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lakehouse_cdc import PROJECT_ROOT

LAYERS = ("bronze", "silver", "snapshots", "dimensions", "gold", "seeds")


class SlimCiError(RuntimeError):
    """The base could not be read; the message says what to change."""


@dataclass
class CiResult:
    schema: str
    built: list[str]  # unique ids of the nodes dbt ran, in run order
    seconds: float
    dropped: bool


def _git(project: Path, *args: str) -> bytes:
    proc = subprocess.run(["git", "-C", str(project), *args], capture_output=True)
    if proc.returncode != 0:
        raise SlimCiError(f"git {' '.join(args)}: {proc.stderr.decode().strip()}")
    return proc.stdout


def branch_schema(project: Path) -> str:
    """`ci_<branch>`, lower snake case, short enough for a schema name."""
    branch = _git(project, "rev-parse", "--abbrev-ref", "HEAD").decode().strip()
    name = re.sub(r"[^a-z0-9]+", "_", branch.lower()).strip("_") or "detached"
    return f"ci_{name[:40]}"


def base_checkout(project: Path, ref: str, into: Path) -> Path:
    """The dbt project as it is at `ref` (a git archive of the project folder)."""
    top = Path(_git(project, "rev-parse", "--show-toplevel").decode().strip())
    prefix = project.resolve().relative_to(top.resolve())
    archive = _git(top, "archive", "--format=tar", ref, str(prefix) if str(prefix) != "." else ".")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    base = into / prefix
    if not (base / "dbt_project.yml").exists():
        raise SlimCiError(f"{ref} has no dbt_project.yml under {prefix}: is it the right ref?")
    return base


def drop_schemas(spark: Any, schema: str) -> list[str]:
    """Drop `<schema>_<layer>` with every table in it (Iceberg files purged)."""
    dropped = []
    for layer in LAYERS:
        database = f"{schema}_{layer}"
        if not spark.catalog.databaseExists(database):
            continue
        for table in spark.catalog.listTables(database):
            kind = "view" if table.tableType == "VIEW" else "table"
            purge = " purge" if kind == "table" and table.tableType != "EXTERNAL" else ""
            spark.sql(f"drop {kind} if exists {database}.`{table.name}`{purge}")
        spark.sql(f"drop database if exists {database} cascade")
        dropped.append(database)
    return dropped


def run_ci(base: str, *, project_dir: Path | str = PROJECT_ROOT, prod_schema: str = "lakehouse",
           schema: str | None = None, state: Path | str | None = None,
           vars: dict[str, Any] | None = None, keep: bool = False,
           select: str = "state:modified+") -> CiResult:
    from lakehouse_cdc.dbt_runner import run_dbt
    from lakehouse_cdc.home import lakehouse_home
    from lakehouse_cdc.spark import get_spark, not_on_local_target

    refusal = not_on_local_target("`lakehouse ci`", "it drops its schemas through this "
                                  "process's Spark, whose catalog is not the cluster's")
    if refusal:
        raise SlimCiError(refusal)
    project = Path(project_dir).resolve()
    schema = schema or branch_schema(project)
    if schema == prod_schema:
        raise SlimCiError(f"the CI schema and --prod-schema are both '{schema}': pass --schema")
    lakehouse_home()
    spark = get_spark()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="lakehouse-ci-") as tmp:
        work = Path(tmp)
        base_project = base_checkout(project, base, work / "base")
        compare = work / "compare"
        run_dbt(["parse"], project_dir=base_project, schema=schema, vars=vars,
                target_path=compare)
        if state is None:
            state = work / "prod"
            run_dbt(["parse"], project_dir=base_project, schema=prod_schema, vars=vars,
                    target_path=state)
        elif not (Path(state) / "manifest.json").exists():
            raise SlimCiError(f"--state {state} has no manifest.json: give the target folder of "
                              "the production build")
        try:
            result = run_dbt(["build", "--select", select, "--state", str(compare),
                              "--defer", "--defer-state", str(state)],
                             project_dir=project, schema=schema, vars=vars,
                             target_path=work / "target")
        finally:
            if not keep:
                drop_schemas(spark, schema)
    built = [r.node.unique_id for r in result.result.results]
    return CiResult(schema, built, time.time() - started, dropped=not keep)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", required=True,
                        help="git ref the pull request merges into, e.g. main or origin/main")
    parser.add_argument("--prod-schema", default="lakehouse",
                        help="schema prefix of the base's build that unchanged models are read "
                        "from (default lakehouse)")
    parser.add_argument("--schema", help="schema prefix to build in (default ci_<branch>)")
    parser.add_argument("--state", type=Path,
                        help="target folder of the base's build (manifest.json) to defer to, "
                        "instead of parsing the base in --prod-schema")
    parser.add_argument("--vars", help="dbt vars as YAML, e.g. '{landing_root: /data/landing}'")
    parser.add_argument("--select", default="state:modified+",
                        help="what to build (default state:modified+)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the CI schemas (default: dropped after the build)")
    parser.add_argument("--project-dir", type=Path, default=PROJECT_ROOT)


def main(args: argparse.Namespace) -> int:
    from lakehouse_cdc.dbt_runner import DbtError

    try:
        result = run_ci(args.base, project_dir=args.project_dir, prod_schema=args.prod_schema,
                        schema=args.schema, state=args.state,
                        vars=yaml.safe_load(args.vars) if args.vars else None, keep=args.keep,
                        select=args.select)
    except (SlimCiError, DbtError) as error:
        print(f"lakehouse ci: {error}")
        return 1
    print(f"lakehouse ci: built {len(result.built)} node(s) in {result.schema}_* "
          f"against {args.base} in {result.seconds:.0f}s"
          + ("" if args.keep else f"; dropped {result.schema}_*"))
    for unique_id in result.built:
        print(f"  {unique_id}")
    return 0
