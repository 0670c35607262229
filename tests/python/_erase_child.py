"""Child process of test_erase.py: its own Spark JVM and metastore (Derby
admits one process), so that an erasure can be killed with SIGKILL.

    python _erase_child.py build SIM LANDING SCHEMA BATCH OUT.json [SUBJECT]
        land BATCH, dbt build everything, dump every table to OUT.json;
        with SUBJECT (customer_id=N) erase it afterwards (the test kills it)
    python _erase_child.py erase-twice LANDING SCHEMA SUBJECT OUT.json
        erase SUBJECT, erase it again, dump (with both runs' figures)
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cdc_helpers import Scenario, canon, silver_state  # noqa: E402
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


def main(argv: list[str]) -> int:
    spark = get_spark()
    from lakehouse_cdc.erase import erase

    if argv[0] == "build":
        sim, landing, schema, batch, out, *subject = argv[1:]
        scenario = Scenario(Path(sim), Path(landing), schema)
        scenario.land(int(batch))
        scenario.build("fqn:*")
        Path(out).write_text(json.dumps(dump(spark, schema)))
        say("[child] built")
        if subject:
            key, value = subject[0].split("=")
            erase(schema, key, value, by="test", vars={"landing_root": landing}, log=say)
    elif argv[0] == "erase-twice":
        landing, schema, subject, out = argv[1:]
        key, value = subject.split("=")
        runs = []
        for _ in range(2):
            certificate = erase(schema, key, value, by="test", vars={"landing_root": landing},
                                log=say)
            runs.append({"clean": certificate.clean, "files": certificate.files_scanned,
                         "tables": certificate.tables_scanned,
                         "removed": certificate.rows_removed_now,
                         "rewritten": certificate.files_rewritten_now,
                         "snapshots": dump(spark, schema)["snapshots"]})
        state = dump(spark, schema)
        state["runs"] = runs
        Path(out).write_text(json.dumps(state))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
