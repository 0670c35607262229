#!/usr/bin/env bash
# The test suite: installs what is missing (including Debian's chromium for
# the browser test), then lint (ruff, sqlfluff) and
# pytest with one Spark session for the whole run. Extra arguments go to pytest.
set -euo pipefail
# the dbt-docs test drives Debian's chromium: install it if it is missing
export LAKEHOUSE_BROWSER="${LAKEHOUSE_BROWSER:-1}"
# the cluster tests start PostgreSQL, Spark standalone and the Thrift server
export LAKEHOUSE_CLUSTER="${LAKEHOUSE_CLUSTER:-1}"
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$LAKEHOUSE_ROOT"
exec python -m pytest "$@"
