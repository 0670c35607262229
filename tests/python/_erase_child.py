"""Child process of test_erase.py: its own Spark JVM and metastore (Derby
admits one process), so that an erasure can be killed with SIGKILL.

    python _erase_child.py build SIM LANDING SCHEMA BATCH OUT.json [SUBJECT]
        land BATCH, append the lines of $ERASE_TEST_APPEND ({landing path:
        [line, ...]}, JSON) to the landed files, dbt build everything, dump
        every table to OUT.json; with SUBJECT (customer_id=N) erase it
        afterwards (the test kills it)
    python _erase_child.py erase-twice LANDING SCHEMA SUBJECT OUT.json ROWS.json \
            [SIM BATCH LATER.json]
        try a build (refused: the killed erasure holds the build lock), erase
        SUBJECT, erase it again, dump (with both runs' figures); then for each
        {model_name, record, ...} of ROWS.json: put it into the silver
        quarantine, run the certificate, take it out (OUT.json's "found": what
        each certificate found). With SIM BATCH LATER.json, then print
        "[child] erased", wait for a line on stdin (the test checks the files
        on disk meanwhile) and do what `build` does with BATCH, in this JVM
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cdc_helpers import Scenario, canon, interpreted, silver_state  # noqa: E402
from lakehouse_cdc.dbt_runner import DbtError, run_dbt  # noqa: E402
from lakehouse_cdc.simulator import TABLES  # noqa: E402
from lakehouse_cdc.spark import get_spark  # noqa: E402

LAYERS = ("silver", "snapshots", "dimensions", "gold", "ops")
say = functools.partial(print, flush=True)


def dump(spark, schema: str) -> dict:
    tables, snapshots = {}, {}
    for layer in LAYERS:
        if not spark.catalog.databaseExists(f"{schema}_{layer}"):
            continue
        for table in spark.catalog.listTables(f"{schema}_{layer}"):
            if table.isTemporary or table.tableType == "VIEW":
                continue
            name = f"{schema}_{layer}.{table.name}"
            tables[name] = [{k: canon(v) for k, v in r.asDict().items()}
                            for r in spark.table(name).collect()]
            snapshots[name] = spark.sql(f"select count(*) from {name}.snapshots").collect()[0][0]
    silver = {t: [[list(k), v] for k, v in silver_state(spark, schema, t).items()] for t in TABLES}
    return {"tables": tables, "snapshots": snapshots, "silver": silver}


def put_back_and_certify(spark, landing: str, schema: str, key: str, value: str,
                         rows: str) -> list[list[str]]:
    """What the certificate finds with each row of the JSON file `rows` put
    back into the silver quarantine (one at a time, taken out after)."""
    from lakehouse_cdc.erase import Erasure, certify, load_declarations

    decl = load_declarations(schema, _vars(landing))
    erasure = Erasure(spark, decl, key, value, "test")
    hashes = erasure.hashes()
    table = f"{schema}_silver.cdc_quarantine"
    columns = spark.table(table).schema
    found = []
    for row in json.loads(Path(rows).read_text()):
        full = {c.name: None for c in columns} | row | {"run_id": "test-put-back"}
        spark.createDataFrame([full], columns).writeTo(table).append()
        found.append(certify(spark, decl, hashes).found)
        spark.sql(f"delete from {table} where run_id = 'test-put-back'")
        # a deleted row stays in its data file until it is rewritten (merge-on-read),
        # and the certificate reads the files too: off the disk, as erase does
        erasure.purge_history([table])
    return found


def _vars(landing: str) -> dict:
    """The build lock on, as on a shared catalog (the local target has it off)."""
    return {"landing_root": landing, "lakehouse_build_lock": True}


def main(argv: list[str]) -> int:
    spark = get_spark()
    from lakehouse_cdc.erase import erase

    if argv[0] == "build":
        sim, landing, schema, batch, out, *subject = argv[1:]
        land_and_build(spark, sim, landing, schema, batch, out)
        if subject:
            key, value = subject[0].split("=")
            erase(schema, key, value, by="test", vars=_vars(landing), log=say)
    elif argv[0] == "erase-twice":
        landing, schema, subject, out, rows, *later = argv[1:]
        key, value = subject.split("=")
        # the killed erasure still holds the build lock: a build is refused
        lock = [{k: canon(v) for k, v in r.asDict().items()}
                for r in spark.table(f"{schema}_ops.lakehouse_lock").collect()]
        try:
            run_dbt(["run", "--select", "slv_retail__product"], schema=schema,
                    vars=_vars(landing))
            refused = ""
        except DbtError as error:
            refused = str(error)
        runs = []
        for _ in range(2):
            certificate = erase(schema, key, value, by="test", vars=_vars(landing), log=say)
            runs.append({"clean": certificate.clean, "files": certificate.files_scanned,
                         "tables": certificate.tables_scanned,
                         "removed": certificate.rows_removed_now,
                         "rewritten": certificate.files_rewritten_now,
                         "snapshots": dump(spark, schema)["snapshots"]})
        state = dump(spark, schema)
        state["runs"] = runs
        state["lock_after_kill"], state["build_refused"] = lock, refused
        state["found"] = put_back_and_certify(spark, landing, schema, key, value, rows)
        Path(out).write_text(json.dumps(state))
        if later:
            say("[child] erased")
            sys.stdin.readline()
            sim, batch, later_out = later
            land_and_build(spark, sim, landing, schema, batch, later_out)
    return 0


def land_and_build(spark, sim: str, landing: str, schema: str, batch: str, out: str) -> None:
    """Land `batch`, append the lines of $ERASE_TEST_APPEND, build everything
    and dump every table to `out`."""
    scenario = Scenario(Path(sim), Path(landing), schema)
    scenario.land(int(batch))
    for path, lines in json.loads(os.environ.get("ERASE_TEST_APPEND", "{}")).items():
        with open(Path(landing) / path, "a", encoding="utf-8") as handle:
            handle.writelines(lines)
    # (the data tests are not run: this test asserts on the tables itself)
    with interpreted(spark):
        scenario.build("fqn:*", data_tests=False)
    Path(out).write_text(json.dumps(dump(spark, schema)))
    say("[child] built")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
