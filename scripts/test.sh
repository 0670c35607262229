#!/usr/bin/env bash
# The test suite: installs what is missing (including Debian's chromium for
# the browser test), then lint (ruff, sqlfluff) and
# pytest in one process with one Spark session (LAKEHOUSE_TEST_WORKERS=N:
# N pytest-xdist workers, each its own Spark session; on 2 cores one process
# is faster, README "Testing"). Extra arguments go to pytest.
set -euo pipefail
# the dbt-docs test drives Debian's chromium: install it if it is missing
export LAKEHOUSE_BROWSER="${LAKEHOUSE_BROWSER:-1}"
# the cluster tests start PostgreSQL, Spark standalone and the Thrift server
export LAKEHOUSE_CLUSTER="${LAKEHOUSE_CLUSTER:-1}"
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$LAKEHOUSE_ROOT"
# loadgroup: tests sharing an expensive fixture stay on one worker; the order
# conftest.py gives (longest first) is kept
workers="${LAKEHOUSE_TEST_WORKERS:-0}"
if [ "$workers" = 0 ]; then
    exec python -m pytest -p no:xdist "$@"
fi
exec python -m pytest -n "$workers" --dist loadgroup --no-loadscope-reorder "$@"
