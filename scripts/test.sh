#!/usr/bin/env bash
# The test suite: installs what is missing, then lint (ruff, sqlfluff) and
# pytest with one Spark session for the whole run. Extra arguments go to pytest.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$LAKEHOUSE_ROOT"
exec python -m pytest "$@"
