"""`lakehouse quality`: Great Expectations suites on the silver and gold tables.

Suites live in quality/suites.yml. Each is validated on a Spark DataFrame of
its table; results are written as JSON (one file per suite) and as browsable
Data Docs (HTML). A suite fails when fewer than `min_success_percent` of its
expectations pass; the command then prints what failed and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lakehouse_cdc import PROJECT_ROOT

DEFAULT_SUITES = PROJECT_ROOT / "quality" / "suites.yml"


@dataclass
class SuiteResult:
    name: str
    table: str
    success_percent: float
    threshold: float
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.success_percent >= self.threshold


@dataclass
class QualityReport:
    suites: list[SuiteResult]
    results_dir: Path
    data_docs: Path | None

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.suites)

    def summary(self) -> str:
        lines = ["Great Expectations", f"{'suite':<32}{'passed':>8}{'needed':>8}  result"]
        for s in self.suites:
            lines.append(f"{s.name:<32}{s.success_percent:>7.0f}%{s.threshold:>7.0f}%  "
                         f"{'ok' if s.passed else 'FAILED'}")
            lines += [f"    - {failure}" for failure in s.failures]
        lines.append(f"results (JSON): {self.results_dir}")
        if self.data_docs:
            lines.append(f"Data Docs (HTML): {self.data_docs}")
        return "\n".join(lines)


def load_suites(path: Path = DEFAULT_SUITES) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text())["suites"]


def _expectation(name: str, kwargs: dict[str, Any]):
    import great_expectations as gx

    class_name = "".join(part.capitalize() for part in name.split("_"))
    cls = getattr(gx.expectations, class_name, None)
    if cls is None:
        raise SystemExit(f"quality: unknown expectation '{name}' (no gx.expectations.{class_name})")
    return cls(**kwargs)


def run_suites(spark: Any, suites: dict[str, Any], schema: str, out_dir: Path,
               data_docs: bool = True) -> QualityReport:
    import great_expectations as gx

    out_dir = Path(out_dir)
    results_dir = out_dir / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="file", project_root_dir=str(out_dir))
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context.variables.progress_bars = ProgressBarsConfig(globally=False,
                                                         metric_calculations=False)
    # a SparkSession, or on the cluster target tables read through Thrift as pandas
    kind = getattr(spark, "kind", "spark")
    source = (context.data_sources.get(kind) if kind in context.data_sources.all()
              else context.data_sources.add_pandas(name=kind) if kind == "pandas"
              # persist=False: GX would otherwise cache each table in the session,
              # and later queries in the same process (dbt) would read that stale copy
              else context.data_sources.add_spark(name=kind, persist=False))
    reports = []
    for name, spec in suites.items():
        table = spec["table"].format(schema=schema)
        for registry, item in ((context.checkpoints, name), (context.validation_definitions, name),
                               (context.suites, name)):
            with contextlib.suppress(Exception):  # absent on the first run
                registry.delete(item)
        asset = (source.get_asset(name) if name in [a.name for a in source.assets]
                 else source.add_dataframe_asset(name=name))
        batch = (asset.get_batch_definition("whole") if asset.batch_definitions
                 else asset.add_batch_definition_whole_dataframe("whole"))
        suite = context.suites.add(gx.ExpectationSuite(name=name))
        for entry in spec["expectations"]:
            (expectation, kwargs), = entry.items()
            suite.add_expectation(_expectation(expectation, kwargs))
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=name, data=batch, suite=suite))
        actions = [gx.checkpoint.UpdateDataDocsAction(name="data_docs")] if data_docs else []
        checkpoint = context.checkpoints.add(
            gx.Checkpoint(name=name, validation_definitions=[definition], actions=actions))
        outcome = checkpoint.run(batch_parameters={"dataframe": spark.table(table)})
        (result,) = outcome.run_results.values()
        (results_dir / f"{name}.json").write_text(json.dumps(result.to_json_dict(), indent=2))
        failures = []
        for check in result.results:
            if not check.success:
                config = check.expectation_config
                args = {k: v for k, v in config.kwargs.items() if k != "batch_id"}
                failures.append(f"{config.type} {args}: "
                                f"{check.result.get('unexpected_count', '?')} unexpected")
        reports.append(SuiteResult(name, table, float(result.statistics["success_percent"] or 0),
                                   float(spec.get("min_success_percent", 100)), failures))
    docs = out_dir / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    return QualityReport(reports, results_dir, docs if docs.exists() else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lakehouse quality",
        description="Validate the silver and gold tables with the Great Expectations suites "
        "of quality/suites.yml; write JSON results and HTML Data Docs; exit 1 if a suite "
        "falls below its threshold.")
    parser.add_argument("--schema", default="lakehouse", help="schema prefix (default lakehouse)")
    parser.add_argument("--suites", type=Path, default=DEFAULT_SUITES, help="suites file")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default $LAKEHOUSE_HOME/quality)")
    args = parser.parse_args(argv)
    from lakehouse_cdc.cluster import tables_for_target
    from lakehouse_cdc.home import lakehouse_home

    out = args.out or lakehouse_home() / "quality"
    tables = tables_for_target()
    report = run_suites(tables, load_suites(args.suites), args.schema, out)
    print(report.summary())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
