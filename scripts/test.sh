#!/usr/bin/env bash
# The test suite: installs what is missing (including Debian's chromium for
# the browser test), then lint (ruff, sqlfluff) and
# pytest on two workers (pytest-xdist, LAKEHOUSE_TEST_WORKERS; 0 for one
# process), each with one Spark session for its share of the run. Extra
# arguments go to pytest.
set -euo pipefail
# the dbt-docs test drives Debian's chromium: install it if it is missing
export LAKEHOUSE_BROWSER="${LAKEHOUSE_BROWSER:-1}"
# the cluster tests start PostgreSQL, Spark standalone and the Thrift server
export LAKEHOUSE_CLUSTER="${LAKEHOUSE_CLUSTER:-1}"
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$LAKEHOUSE_ROOT"
# loadgroup: tests sharing an expensive fixture stay on one worker; the order
# conftest.py gives (longest first) is kept
exec python -m pytest -n "${LAKEHOUSE_TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder "$@"
