"""Shared test helpers: land simulated batches, build, and compare silver
tables with the simulator's ground truth (never with pipeline output)."""

from __future__ import annotations

import datetime as dt
import random
import re
import socket
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from lakehouse_cdc.dbt_runner import run_dbt
from lakehouse_cdc.simulator import TABLES, land_batch, read_files, read_rejects, read_state_after

SILVER = {name: f"slv_retail__{name}" for name in TABLES}
#: the current-state silver models only (their change-log twins read the same
#: files through the same macros and are built by the whole-project tests)
STATE_MODELS = " ".join(SILVER.values())
#: for the dbt invocations a test repeats (a build per batch) and whose
#: artifacts no test reads: dbt then skips writing manifest.json (1.3 MB,
#: twice per invocation) and run_results.json
NO_ARTIFACTS = ("--no-write-json",)


def free_port() -> int:
    """A loopback port that is free now and lies below the kernel's ephemeral
    range: a port the kernel hands out on request (what ``bind(0)`` returns)
    may be handed again to any other process, such as a Spark JVM of the
    background work, between the check and the server's own bind."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(200):
        port = random.randrange(20000, low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port found in 20000-{low - 1}")


#: the settings under which the suite's dbt invocations and a test's child
#: process (crash, erasure) build: tables of a few hundred rows, where
#: compiling generated code costs more than it saves. The results are the
#: same, and so are the write statements the tests kill
INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
               "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@contextmanager
def interpreted(spark) -> Iterator[None]:
    """Run Spark without generated code inside the block (`INTERPRETED`): a
    crash-test build about 20% faster; the erasure test, run alone, 420 s
    instead of 473 with its two builds interpreted (2026-12-02; whole-stage
    code generation off alone gained nothing there). Only around builds:
    interpreted, Spark 3.5 fails to make the rows of
    `spark.catalog.listTables` (argument type mismatch in `catalog.Table`'s
    constructor), which the erasure and the tests' dumps call."""
    saved = {key: spark.conf.get(key, None) for key in INTERPRETED}
    for key, value in INTERPRETED.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextmanager
def failing_statements(pattern: str) -> Iterator[None]:
    """dbt-spark's statements that match `pattern` raise instead of running."""
    from dbt.adapters.spark import session as spark_session

    execute = spark_session.Cursor.execute

    def refuse(cursor, sql: str, *parameters):
        if re.search(pattern, sql):
            raise RuntimeError(f"stopped here by the test: {sql[:80]}")
        return execute(cursor, sql, *parameters)

    spark_session.Cursor.execute = refuse
    try:
        yield
    finally:
        spark_session.Cursor.execute = execute


def _strip(value: str | None) -> str | None:
    return None if value is None else value.strip(" ")


def _lower(value: str | None) -> str | None:
    return None if value is None else value.strip(" ").lower()


def _upper(value: str | None) -> str | None:
    return None if value is None else value.strip(" ").upper()


#: The cleaning the silver models promise, restated in Python per column.
CLEANING = {
    "customer_master": {"first_name": _strip, "last_name": _strip, "employer_name": _strip,
                        "email_id": _lower, "loyalty_tier": _strip},
    "customer_address": {"city": _strip, "country": _strip},
    "product": {"product_name": _strip, "category": _strip},
    "orders": {"status": _upper},
    "order_items": {},
}


def canon(value: Any) -> str | None:
    """A Spark value in the simulator's text form (DMS CSV conventions)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return f"{value:.2f}"
    return str(value)


def table_columns(table: str) -> list[str]:
    spec = TABLES[table]
    names = [c.name for c in spec.columns]
    if spec.added_column is not None:
        names.append(spec.added_column.name)
    return names


def truth_state(sim_dir: Path, table: str, batch: int) -> dict[tuple, dict[str, str | None]]:
    cleaners = CLEANING[table]
    keys = TABLES[table].key
    out = {}
    for row in read_state_after(sim_dir, table, batch):
        clean = {c: cleaners.get(c, lambda v: v)(row.get(c)) for c in table_columns(table)}
        out[tuple(clean[k] for k in keys)] = clean
    return out


def silver_state(spark, schema: str, table: str, where: str = "true"
                 ) -> dict[tuple, dict[str, str | None]]:
    keys = TABLES[table].key
    columns = table_columns(table)
    existing = {f.name for f in spark.table(f"{schema}_silver.{SILVER[table]}").schema}
    if "is_deleted" in existing:  # soft deletes: the live rows
        where = f"({where}) and not is_deleted"
    select = ", ".join(c if c in existing else f"null as {c}" for c in columns)
    out = {}
    for row in spark.sql(f"select {select} from {schema}_silver.{SILVER[table]} where {where}"
                         ).collect():
        clean = {c: canon(row[c]) for c in columns}
        key = tuple(clean[k] for k in keys)
        assert key not in out, f"{table}: key {key} appears twice in silver"
        out[key] = clean
    return out


def assert_scenario_has_file_traps(sim_dir: Path) -> None:
    """A simulated scenario lands late and redelivered files and rows of
    every reject reason: a comparison with its truth proves nothing otherwise."""
    kinds = Counter(f.kind for f in read_files(sim_dir))
    assert kinds["late"] and kinds["redelivery"], kinds
    assert {r.reason for r in read_rejects(sim_dir)} == {
        "missing_key", "unknown_op", "unparseable_value", "missing_sequence"}


def assert_states_match_truth(sim_dir: Path, states: list[dict], table: str) -> None:
    """`states[batch][table]` (silver after each batch) equals the truth then."""
    for batch, state in enumerate(states):
        expected = truth_state(sim_dir, table, batch)
        assert state[table] == expected, f"batch {batch}: " + diff(expected, state[table])


def quarantined_and_rejected(spark, scenario: Scenario) -> tuple[Counter, Counter]:
    """(file name, row, reason) of the quarantined rows, and of the rejects the
    simulator injected."""
    models = "', '".join(SILVER.values())
    got = Counter((Path(r.file_path).name, r.row_number, r.reason.split(":")[0]) for r in spark.sql(
        f"select file_path, row_number, reason from {scenario.schema}_silver.cdc_quarantine "
        f"where model_name in ('{models}')").collect())
    expected = Counter((Path(r.file).name, r.row, r.reason) for r in read_rejects(scenario.sim_dir))
    return got, expected


def diff(expected: dict, actual: dict, limit: int = 5) -> str:
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    wrong = [(k, expected[k], actual[k]) for k in expected if k in actual
             and expected[k] != actual[k]]
    return (f"missing {len(missing)} {missing[:limit]}; extra {len(extra)} {extra[:limit]}; "
            f"different {len(wrong)} {wrong[:limit]}")


@dataclass
class Scenario:
    """A simulated source landing batch by batch into its own folder and schema."""

    sim_dir: Path
    landing: Path
    schema: str
    vars: dict[str, Any] = field(default_factory=dict)
    target_path: Path | None = None
    #: what build() builds unless told otherwise
    select: str = "tag:silver"
    #: whether builds write manifest.json and run_results.json (a state
    #: that slim CI defers to needs them); otherwise NO_ARTIFACTS
    artifacts: bool = False

    def land(self, batch: int) -> list[Path]:
        return land_batch(self.sim_dir, self.landing, batch)

    def build(self, select: str | None = None, expect_success: bool = True,
              unit_tests: bool = False, data_tests: bool = True) -> Any:
        """`dbt build` of `select`; the dbt unit tests of the selected models
        only when asked (they do not depend on the batch landed), their data
        tests unless told not to (a test that asserts on the tables itself)."""
        skip = [] if unit_tests else ["--exclude-resource-type", "unit_test"]
        if not data_tests:
            skip += ["--exclude-resource-type", "test"]
        if not self.artifacts:
            skip.extend(NO_ARTIFACTS)
        return run_dbt(["build", "--select", select or self.select, *skip],
                       schema=self.schema,
                       vars={"landing_root": str(self.landing), **self.vars},
                       target_path=self.target_path, expect_success=expect_success)
