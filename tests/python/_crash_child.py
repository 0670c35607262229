"""Child process of test_silver_crash.py: its own Spark JVM and metastore.

    python _crash_child.py build SIM LANDING SCHEMA LOGDIR [BATCH ...]
        land the given batches, then dbt build the silver models
    python _crash_child.py dump SCHEMA OUT.json
        write every silver table's rows (truth text form) as JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cdc_helpers import Scenario, silver_state  # noqa: E402
from lakehouse_cdc.simulator import TABLES  # noqa: E402
from lakehouse_cdc.spark import get_spark  # noqa: E402


def main(argv: list[str]) -> int:
    spark = get_spark()
    if argv[0] == "build":
        sim, landing, schema, logdir, *batches = argv[1:]
        scenario = Scenario(Path(sim), Path(landing), schema)
        for batch in batches:
            scenario.land(int(batch))
        from lakehouse_cdc.dbt_runner import run_dbt

        run_dbt(["build", "--select", "tag:silver", "--log-path", logdir,
                 "--log-level-file", "debug"], schema=schema,
                vars={"landing_root": landing})
    elif argv[0] == "dump":
        schema, out = argv[1:]
        state = {t: [[list(k), v] for k, v in silver_state(spark, schema, t).items()]
                 for t in TABLES}
        Path(out).write_text(json.dumps(state))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
