#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, generates
# the deterministic sample change files, runs `dbt build` on local Spark +
# Iceberg and prints where the warehouse is. Extra arguments go to
# `lakehouse run` (see `lakehouse run --help`).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$LAKEHOUSE_ROOT"
exec lakehouse run "$@"
