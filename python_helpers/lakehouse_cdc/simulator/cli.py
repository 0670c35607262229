"""`lakehouse simulate`: command-line front end of the simulator."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lakehouse_cdc.simulator.generate import SimulationConfig, simulate
from lakehouse_cdc.simulator.writers import FORMATS

DESCRIPTION = (
    "Simulate a retail database replicated by AWS DMS to S3: a full load and CDC batches "
    "of change files under OUT/dms/retail/<table>/ (or OUT/debezium/...), the ground truth "
    "under OUT/truth/ and OUT/manifest.json. Same arguments, same bytes."
)
_DEFAULTS = SimulationConfig(out=Path("."))


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not within [0, 1]")
    return value


def _mix(text: str) -> tuple[int, int, int]:
    parts = text.split(",")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I,U,D weights like 60,30,10: {text!r}") \
            from None
    if len(values) != 3 or min(values) < 0 or sum(values) == 0:
        raise argparse.ArgumentTypeError(f"expected three non-negative weights: {text!r}")
    return values[0], values[1], values[2]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = _DEFAULTS
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="output directory (dms/ or debezium/, truth/, manifest.json)")
    parser.add_argument("--seed", type=int, default=d.seed,
                        help=f"random seed; the only source of randomness (default {d.seed})")
    parser.add_argument("--scale", type=_positive, default=d.scale,
                        help="full-load rows of customer_master and of product; "
                             "customer_address = scale, orders = 2*scale, order_items ~ "
                             f"6*scale, about 11*scale rows in all (default {d.scale})")
    parser.add_argument("--batches", type=int, default=d.batches,
                        help=f"CDC batches after the full load, one simulated hour each "
                             f"(default {d.batches})")
    parser.add_argument("--changes-per-batch", type=_positive, default=None,
                        help="row changes committed per batch (default max(20, 5%% of scale))")
    parser.add_argument("--mix", type=_mix, default=d.mix, metavar="I,U,D",
                        help="insert,update,delete weights of the primary operations "
                             f"(default {','.join(map(str, d.mix))})")
    parser.add_argument("--multi-change-rate", type=_rate, default=d.multi_change_rate,
                        help="share of inserted/updated keys that get 1-3 more changes in the "
                             f"same batch (default {d.multi_change_rate})")
    parser.add_argument("--tie-rate", type=_rate, default=d.tie_rate,
                        help="share of transactions committed at the previous one's exact "
                             f"microsecond (default {d.tie_rate})")
    parser.add_argument("--late-rate", type=_rate, default=d.late_rate,
                        help="share of a batch's changes held back to a later batch's 'late' "
                             f"file (default {d.late_rate})")
    parser.add_argument("--redeliver-rate", type=_rate, default=d.redeliver_rate,
                        help="share of CDC files written again later under a new name, and of "
                             f"rows written twice within a file (default {d.redeliver_rate})")
    parser.add_argument("--add-column-at-batch", type=int, default=d.add_column_at_batch,
                        metavar="N",
                        help="customer_master gets a trailing loyalty_tier column from batch N "
                             f"on; 0 = never (default {d.add_column_at_batch})")
    parser.add_argument("--malformed-rate", type=_rate, default=d.malformed_rate,
                        help="chance per CDC row of an extra injected bad row (missing key, "
                             "unknown Op, unparseable value, missing commit timestamp), each "
                             f"listed in truth/rejects.csv (default {d.malformed_rate})")
    parser.add_argument("--format", choices=FORMATS, default=d.format,
                        help="dms csv, dms parquet (all columns strings) or flattened "
                             f"debezium json lines (default {d.format})")
    parser.add_argument("--full-load-op", choices=("I", "absent"), default=d.full_load_op,
                        help="LOAD files carry Op=I, or no Op column at all "
                             f"(default {d.full_load_op})")
    parser.add_argument("--csv-null", choices=("empty", "NULL"), default=d.csv_null,
                        help="NULL in change CSVs: empty unquoted field or the literal NULL "
                             f"(default {d.csv_null}); the empty string is always \"\"")
    parser.add_argument("--no-header", dest="csv_header", action="store_false",
                        help="CSV files without a header row, as DMS writes them by default "
                             "(AddColumnName=false); the sample's source YAML then needs "
                             "--vars '{bronze_csv_header: false}'")
    parser.add_argument("--load-file-rows", type=_positive, default=d.load_file_rows,
                        help=f"rows per LOAD file (default {d.load_file_rows})")
    parser.add_argument("--cdc-file-rows", type=_positive, default=d.cdc_file_rows,
                        help=f"max rows per CDC file (default {d.cdc_file_rows})")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a previous simulation in --out")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def config_from_args(args: argparse.Namespace) -> SimulationConfig:
    return SimulationConfig(
        out=args.out, seed=args.seed, scale=args.scale, batches=args.batches,
        changes_per_batch=args.changes_per_batch, mix=tuple(args.mix),
        multi_change_rate=args.multi_change_rate, tie_rate=args.tie_rate,
        late_rate=args.late_rate, redeliver_rate=args.redeliver_rate,
        add_column_at_batch=args.add_column_at_batch, malformed_rate=args.malformed_rate,
        format=args.format, full_load_op=args.full_load_op, csv_null=args.csv_null,
        csv_header=args.csv_header,
        load_file_rows=args.load_file_rows, cdc_file_rows=args.cdc_file_rows,
    )


def run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        simulate(config, overwrite=args.overwrite, log=None if args.quiet else sys.stderr)
    except (ValueError, FileExistsError, RuntimeError) as exc:
        print(f"simulate: error: {exc}", file=sys.stderr)
        return 2
    return 0


def build_parser(prog: str = "python -m lakehouse_cdc.simulator") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))
