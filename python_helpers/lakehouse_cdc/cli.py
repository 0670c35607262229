"""`lakehouse`: the project's command line.

    lakehouse run        generate the sample, land it, dbt build, summary
    lakehouse simulate   write DMS change files + ground truth
    lakehouse dbt ARGS   run dbt in-process with the project's settings
    lakehouse bench      time a CDC batch against two table sizes
    lakehouse quality    Great Expectations suites + Data Docs
    lakehouse maintain   Iceberg table maintenance by policy, with an audit table
    lakehouse erase      GDPR erasure of a subject, with a ledger and a certificate
    lakehouse jars       put the Iceberg runtime jars in place
    lakehouse add-table  source YAML + silver model + docs/tests for a landed folder
    lakehouse ci         slim CI: build what a branch changed, against the base
    lakehouse cluster    up | down | status: a local Spark cluster on PostgreSQL
    lakehouse follow     apply each change file as it lands, from one warm process
"""

from __future__ import annotations

import argparse
import os
import sys

from lakehouse_cdc import PROJECT_ROOT


def _cmd_run(args: argparse.Namespace) -> int:
    from lakehouse_cdc.pipeline import RunOptions, run

    return run(RunOptions(scale=args.scale, batches=args.batches, seed=args.seed,
                          step=args.step, fresh=args.fresh, schema=args.schema,
                          select=args.select, format=args.format))


def _cmd_simulate(args: argparse.Namespace) -> int:
    from lakehouse_cdc.simulator.cli import run

    return run(args)


def _cmd_dbt(args: argparse.Namespace) -> int:
    from lakehouse_cdc.dbt_runner import DbtError, run_dbt
    from lakehouse_cdc.pipeline import lakehouse_home
    from lakehouse_cdc.spark import get_spark

    lakehouse_home()
    if os.environ.get("DBT_TARGET", "local") == "local":
        get_spark()
    else:  # dbt talks to a Thrift server: no Spark in this process
        from lakehouse_cdc.cluster import prepare_thrift_client

        prepare_thrift_client()
    try:
        run_dbt(args.dbt_args, quiet=False)
    except DbtError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from lakehouse_cdc.benchmark import main

    return main(args.bench_args)


def _cmd_jars(args: argparse.Namespace) -> int:
    from lakehouse_cdc.jars import main

    return main([] if not args.quiet else ["--quiet"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lakehouse",
        description="Mirror operational databases into an Iceberg lakehouse with dbt on Spark. "
        f"Project: {PROJECT_ROOT}",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="the main job: sample data, dbt build, run summary",
                         description="Generate the deterministic sample change files (once), "
                         "land the batches not landed yet, run `dbt build` on local Spark + "
                         "Iceberg, print a per-table summary and where the warehouse is. "
                         "A second run lands nothing new and changes no table.")
    run.add_argument("--scale", type=int, default=300, help="sample size (default 300 customers)")
    run.add_argument("--batches", type=int, default=3, help="CDC batches (default 3)")
    run.add_argument("--seed", type=int, default=42, help="sample seed (default 42)")
    run.add_argument("--step", action="store_true",
                     help="one dbt build per landed batch instead of one for all")
    run.add_argument("--fresh", action="store_true",
                     help="delete $LAKEHOUSE_HOME (warehouse, metastore, landing) first")
    run.add_argument("--schema", default="lakehouse",
                     help="schema prefix: <prefix>_bronze, _silver, ... (default lakehouse)")
    run.add_argument("--select", help="dbt selection for the build (default: everything)")
    run.add_argument("--format", choices=("csv", "parquet", "debezium"), default="csv",
                     help="sample change files: DMS csv or parquet, or Debezium JSON lines "
                     "(default csv; changing it needs --fresh)")
    run.set_defaults(func=_cmd_run)

    from lakehouse_cdc.simulator.cli import DESCRIPTION, add_arguments

    simulate = sub.add_parser("simulate", help="write DMS change files and ground truth",
                              description=DESCRIPTION)
    add_arguments(simulate)
    simulate.set_defaults(func=_cmd_simulate)

    dbt = sub.add_parser("dbt", help="run dbt in-process (one Spark session) with the "
                         "project's profile, e.g. `lakehouse dbt docs generate`")
    dbt.add_argument("dbt_args", nargs=argparse.REMAINDER, help="arguments for dbt")
    dbt.set_defaults(func=_cmd_dbt)

    sub.add_parser("quality", help="Great Expectations suites on silver and gold, with "
                   "Data Docs", add_help=False)
    bench = sub.add_parser("bench", help="time one CDC batch against two table sizes",
                           add_help=False)
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(func=_cmd_bench)

    from lakehouse_cdc import add_table, follow, slim_ci

    for name, module, help_text in (
            ("add-table", add_table, "write the source YAML, silver model, docs and tests "
             "of a table from its landed files"),
            ("ci", slim_ci, "slim CI: build state:modified+ of this branch against --base "
             "in a throw-away schema"),
            ("follow", follow, "apply each change file as it lands (silver and SCD2 history), "
             "from one warm Spark session; prints each file's latency")):
        command = sub.add_parser(name, help=help_text, description=module.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(command)
        command.set_defaults(func=module.main)

    sub.add_parser("maintain", help="compact, expire snapshots, remove orphans by policy; "
                   "prints and audits what it did", add_help=False)
    sub.add_parser("erase", help="erase a data subject everywhere and prove it "
                   "(e.g. --subject customer_id=42)", add_help=False)
    jars = sub.add_parser("jars", help="put the Iceberg runtime jars into .jars/")
    jars.add_argument("--quiet", action="store_true")
    jars.set_defaults(func=_cmd_jars)

    from lakehouse_cdc import cluster

    cluster_cmd = sub.add_parser("cluster", help="up | down | status: Spark standalone + "
                                 "Thrift server + PostgreSQL catalog on this machine",
                                 description=cluster.DESCRIPTION)
    cluster.add_arguments(cluster_cmd)
    cluster_cmd.set_defaults(func=cluster.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("[lakehouse] interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        # its own parser, so that `lakehouse bench --help` shows its options
        return _cmd_bench(argparse.Namespace(bench_args=argv[1:]))
    # own parsers, so that `--help` shows their options
    if argv[:1] == ["maintain"]:
        from lakehouse_cdc.maintain import main as maintain_main

        return maintain_main(argv[1:])
    if argv[:1] == ["erase"]:
        from lakehouse_cdc.erase import main as erase_main

        return erase_main(argv[1:])
    if argv[:1] == ["quality"]:
        from lakehouse_cdc.quality import main as quality_main

        return quality_main(argv[1:])
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
