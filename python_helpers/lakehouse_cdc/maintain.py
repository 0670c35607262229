"""`lakehouse maintain`: Iceberg table maintenance by per-layer policy.

The work is the dbt macro `lakehouse_maintain` (macros/ops/), so that
`dbt run-operation lakehouse_maintain` does the same; this module calls it
in-process and prints what it did per table from `<schema>_ops.maintenance_audit`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from collections.abc import Callable
from typing import Any

import yaml

AUDIT_COLUMNS = ("table_name", "actions", "data_files_before", "data_files_after",
                 "delete_files_before", "delete_files_after", "bytes_before", "bytes_after",
                 "snapshots_before", "snapshots_after", "orphan_files_removed")


def operation(select: list[str] | None, dry_run: bool, run_id: str) -> list[str]:
    """dbt's arguments for one maintenance run, audited under `run_id`."""
    args = {"select": select or None, "dry_run": dry_run, "run_id": run_id}
    return ["run-operation", "lakehouse_maintain", "--args",
            yaml.safe_dump(args, default_flow_style=True).strip()]


def audit(tables: Any, schema: str, run_id: str) -> list[dict[str, Any]]:
    """The audit rows of one maintenance run (one per table). `tables` is a
    SparkSession or, on the cluster target, a ThriftTables."""
    query = (f"select * from {schema}_ops.maintenance_audit where run_id = '{run_id}' "
             "order by table_name")
    if getattr(tables, "kind", "") == "pandas":
        return tables.sql(query)
    return [row.asDict() for row in tables.sql(query).collect()]


def maintain(schema: str, select: list[str] | None = None, dry_run: bool = False,
             vars: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run the maintenance; return this run's audit rows (one per table).
    Where builds take the build lock, it is held and released as
    run_holding_lock says; a LockNotReleased (the maintenance done, the lock
    still held) carries the run's audit rows as its `rows` (none, and why
    in `unread`, when they cannot be read)."""
    from lakehouse_cdc.cluster import tables_for_target
    from lakehouse_cdc.dbt_runner import LockNotReleased, run_dbt

    run_id = f"maintain-{uuid.uuid4().hex[:12]}"
    tables = tables_for_target()
    try:
        run_holding_lock(operation(select, dry_run, run_id), vars, run_id,
                         lambda args, given: run_dbt(args, schema=schema, vars=given))
    except LockNotReleased as error:  # the maintenance itself is done: its rows go with it
        error.rows, error.unread = [], None
        try:
            error.rows = audit(tables, schema, run_id)
        except Exception as unread:  # noqa: BLE001 (how to release the lock comes first)
            error.unread = (f"the run's report could not be read ({unread!r}); it is in "
                            f"{schema}_ops.maintenance_audit, run_id '{run_id}'")
        raise
    return audit(tables, schema, run_id)


def run_holding_lock(args: list[str], vars: dict[str, Any] | None, run_id: str,
                     run: Callable[[list[str], dict[str, Any]], Any]) -> None:
    """Run the dbt `run-operation` `args` through `run(args, vars)`.

    Where builds take the build lock (a shared catalog, or the var
    `lakehouse_build_lock`), the operation holds it as `run_id` (the var
    `lakehouse_lock_holder`) and this function releases it, also when the
    operation fails: a failed `run-operation` runs no on-run-end hook, so
    the lock would stay taken, refusing every build, until it expires
    (`lakehouse_lock_ttl_minutes`). A caller that passes its own holder (a
    job holding the lock) keeps it: that job releases it. A release that
    fails after the operation succeeded raises LockNotReleased (the work is
    done; the lock stays held)."""
    from lakehouse_cdc.dbt_runner import LockNotReleased

    vars = dict(vars or {})
    release = "lakehouse_lock_holder" not in vars and _may_lock(vars)
    vars.setdefault("lakehouse_lock_holder", run_id)
    try:
        run(args, vars)
    except BaseException:
        if release:  # the operation's error goes on; a failed release is only printed
            try:
                release_lock(vars, run)
            except BaseException as error:  # noqa: BLE001 (printed; the first error wins)
                held = error if isinstance(error, LockNotReleased) else _held(vars, error)
                print(f"[maintain] {held}", file=sys.stderr)
        raise
    if release:
        release_lock(vars, run)


def _may_lock(vars: dict[str, Any]) -> bool:
    """Whether the maintenance may take the build lock: on every target but
    the in-process `local` one, or where the var turns it on
    (`_lakehouse_lock_enabled`, which decides; a release where it took none
    changes nothing)."""
    return bool(vars.get("lakehouse_build_lock", os.environ.get("DBT_TARGET", "local") != "local"))


def release_lock(vars: dict[str, Any], run: Callable[[list[str], dict[str, Any]], Any]) -> None:
    """Release the build lock held as vars' `lakehouse_lock_holder`, through
    `run(args, vars)`; LockNotReleased, saying how to release it by hand,
    when that fails."""
    from lakehouse_cdc.dbt_runner import DbtError, LockNotReleased

    holder = vars["lakehouse_lock_holder"]
    try:
        run(["run-operation", "lakehouse_lock_release", "--args", json.dumps({"holder": holder})],
            vars)
    except DbtError as error:
        raise LockNotReleased(_held(vars, error)) from error


def _held(vars: dict[str, Any], error: BaseException) -> str:
    holder = vars["lakehouse_lock_holder"]
    return (f"the build lock held by {holder} could not be released ({error!r}); release it: "
            f"dbt run-operation lakehouse_lock_release --args '{{holder: {holder}}}'")


def format_report(rows: list[dict[str, Any]]) -> str:
    """What maintenance did, one line per table."""
    head = (f"{'table':<52}{'data files':>12}{'deletes':>10}{'MB':>14}{'snapshots':>11}"
            f"{'orphans':>9}  actions")
    lines = [head, "-" * len(head)]
    for r in rows:
        mb = f"{r['bytes_before'] / 1e6:.2f}>{r['bytes_after'] / 1e6:.2f}"
        lines.append(
            f"{r['table_name']:<52}{r['data_files_before']:>6}>{r['data_files_after']:<5}"
            f"{r['delete_files_before']:>5}>{r['delete_files_after']:<4}{mb:>14}"
            f"{r['snapshots_before']:>6}>{r['snapshots_after']:<4}{r['orphan_files_removed']:>9}"
            f"  {r['actions']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lakehouse maintain",
        description="Compact data and position-delete files, rewrite manifests, expire "
        "snapshots outside the time-travel window (keeping at least N) and remove orphan "
        "files, for every Iceberg table of the project, by the policy under "
        "vars.maintenance in dbt_project.yml (per layer) and meta.maintenance (per model). "
        "Prints what it did per table and appends it to <schema>_ops.maintenance_audit. "
        "Same as `dbt run-operation lakehouse_maintain`.")
    parser.add_argument("--schema", default="lakehouse", help="schema prefix (default lakehouse)")
    parser.add_argument("--select", action="append", metavar="LAYER_OR_TABLE",
                        help="only these layers (silver, gold, ...), tables (any layer) or "
                        "schema.table; repeatable")
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would be done; change nothing")
    parser.add_argument("--vars", type=_vars, default={},
                        help="dbt vars as YAML, as dbt's --vars, e.g. "
                        "'{lakehouse_build_lock: true}' or a policy under 'maintenance'")
    args = parser.parse_args(argv)

    from lakehouse_cdc.cluster import ClusterError
    from lakehouse_cdc.dbt_runner import DbtError, LockNotReleased
    from lakehouse_cdc.pipeline import lakehouse_home

    lakehouse_home()
    try:
        rows = maintain(args.schema, args.select, args.dry_run, args.vars)
    except LockNotReleased as error:  # done, but every build is refused until released
        if error.rows:
            print(format_report(error.rows))
        print(f"maintenance done, but {error}", file=sys.stderr)
        if error.unread:
            print(error.unread, file=sys.stderr)
        return 1
    except (DbtError, ClusterError) as error:
        print(error, file=sys.stderr)
        return 1
    print(format_report(rows))
    if not rows:
        print(f"no Iceberg tables under {args.schema}_*: nothing to maintain", file=sys.stderr)
    return 0


def _vars(text: str) -> dict[str, Any]:
    """--vars: a YAML mapping, as dbt reads it."""
    value = yaml.safe_load(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a YAML mapping: {text!r} (e.g. '{{key: value}}')")
    return value
