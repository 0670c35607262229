#!/usr/bin/env bash
# Installs everything the project needs, idempotently, and exports the
# environment the other scripts use. Source it:  . scripts/bootstrap.sh
#
#   1. Java 17 from Debian, only if `java` is missing
#   2. a virtualenv in .venv with the pinned packages, installed by uv (by pip
#      when uv cannot be had); skipped when the pins and the python_helpers
#      package are unchanged since the last install
#   3. the Iceberg Spark runtime jar plus the relocated Jackson classes it
#      lacks, in .jars/ (skipped when present)
#   4. with LAKEHOUSE_BROWSER=1 (set by scripts/test.sh): Debian's chromium,
#      only if /usr/bin/chromium is missing, for the dbt-docs browser test
#   5. with LAKEHOUSE_CLUSTER=1 or DBT_TARGET=cluster (the local cluster of
#      `lakehouse cluster up`): Debian's postgresql and
#      libpostgresql-jdbc-java if missing, and requirements-cluster.txt
#      (dbt-spark's PyHive extra); the embedded default needs none of them
#
# Environment knobs: LAKEHOUSE_VENV (virtualenv path), LAKEHOUSE_HOME
# (warehouse + metastore + landing files), PYTHON (interpreter to use),
# LAKEHOUSE_BROWSER (1: install the browser too), LAKEHOUSE_CLUSTER (1: the
# cluster's pieces too).
set -euo pipefail

LAKEHOUSE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LAKEHOUSE_ROOT
VENV="${LAKEHOUSE_VENV:-$LAKEHOUSE_ROOT/.venv}"
PYTHON="${PYTHON:-python3.11}"
log() { printf '[bootstrap] %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# only called when something is missing, so refreshing the index each time
# costs nothing on a machine that already has everything
apt_install() {
    as_root apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >&2
}

# 1. Java ---------------------------------------------------------------
if ! command -v java >/dev/null 2>&1; then
    log "java not found: installing openjdk-17-jre-headless from Debian"
    apt_install openjdk-17-jre-headless
fi
# jarjar relocates the Jackson classes the Iceberg runtime expects shaded
if [ ! -f /usr/share/java/jarjar.jar ] && [ ! -f "$LAKEHOUSE_ROOT/.jars/iceberg-shaded-deps.jar" ]; then
    log "installing jarjar (libjarjar-java) from Debian"
    apt_install libjarjar-java
fi

if [ "${LAKEHOUSE_BROWSER:-0}" = 1 ] && [ ! -x /usr/bin/chromium ]; then
    log "chromium not found: installing Debian's chromium (docs browser test)"
    apt_install chromium
fi

cluster=0
if [ "${LAKEHOUSE_CLUSTER:-0}" = 1 ] || [ "${DBT_TARGET:-local}" = cluster ]; then cluster=1; fi
if [ "$cluster" = 1 ]; then
    missing=()
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
    [ -f /usr/share/java/postgresql.jar ] || missing+=(libpostgresql-jdbc-java)
    if [ "${#missing[@]}" -gt 0 ]; then
        log "cluster: installing ${missing[*]} from Debian"
        apt_install "${missing[@]}"
    fi
fi

# 2. virtualenv ---------------------------------------------------------
# Installs into the virtualenv with uv (pinned in requirements.lock, itself
# installed by pip; the same versions as pip, in about a quarter of pip's
# time: 28 s against 115 s for requirements.txt on a fresh machine,
# 2026-12-04), or with pip when uv cannot be had or fails. uv does not read
# pip.conf: pip's configured index (PIP_INDEX_URL, `pip config`) is given to
# uv unless UV_INDEX_URL or UV_DEFAULT_INDEX names one.
_lakehouse_uv=""
_lakehouse_uv_index=()
venv_install() {
    if [ -z "$_lakehouse_uv" ]; then
        _lakehouse_uv=no
        if "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
                -c "$LAKEHOUSE_ROOT/requirements.lock" uv >&2; then
            _lakehouse_uv=yes
            local index
            index="${PIP_INDEX_URL:-$("$VENV/bin/python" -m pip config get global.index-url 2>/dev/null || true)}"
            if [ -n "$index" ] && [ -z "${UV_INDEX_URL:-}${UV_DEFAULT_INDEX:-}" ]; then
                _lakehouse_uv_index=(--index-url "$index")
            fi
        fi
    fi
    if [ "$_lakehouse_uv" = yes ]; then
        "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" ${_lakehouse_uv_index[@]+"${_lakehouse_uv_index[@]}"} "$@" \
            && return 0
        log "uv could not install $*: installing with pip"
    fi
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@"
}
stamp="$(cat "$LAKEHOUSE_ROOT/requirements.txt" "$LAKEHOUSE_ROOT/requirements.lock" \
          "$LAKEHOUSE_ROOT/python_helpers/pyproject.toml" | sha256sum | cut -c1-16)"
if [ ! -x "$VENV/bin/python" ]; then
    command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
    log "creating virtualenv $VENV"
    "$PYTHON" -m venv "$VENV"
fi
if [ "$(cat "$VENV/.lakehouse-stamp" 2>/dev/null)" != "$stamp" ]; then
    log "installing pinned Python packages (first run takes a few minutes)"
    venv_install -r "$LAKEHOUSE_ROOT/requirements.txt" -c "$LAKEHOUSE_ROOT/requirements.lock"
    venv_install --no-deps -e "$LAKEHOUSE_ROOT/python_helpers"
    echo "$stamp" > "$VENV/.lakehouse-stamp"
fi
if [ "$cluster" = 1 ]; then
    cluster_stamp="$(cat "$LAKEHOUSE_ROOT/requirements-cluster.txt" "$LAKEHOUSE_ROOT/requirements.lock" \
                      | sha256sum | cut -c1-16)"
    if [ "$(cat "$VENV/.lakehouse-cluster-stamp" 2>/dev/null)" != "$cluster_stamp" ]; then
        log "cluster: installing requirements-cluster.txt (dbt-spark's PyHive extra)"
        venv_install -r "$LAKEHOUSE_ROOT/requirements-cluster.txt" -c "$LAKEHOUSE_ROOT/requirements.lock"
        echo "$cluster_stamp" > "$VENV/.lakehouse-cluster-stamp"
    fi
fi
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"

# 3. jars ---------------------------------------------------------------
"$VENV/bin/python" -m lakehouse_cdc.jars --quiet

# 5. environment shared by dbt and the helpers ---------------------------
export LAKEHOUSE_HOME="${LAKEHOUSE_HOME:-$LAKEHOUSE_ROOT/.lakehouse}"
export DBT_PROFILES_DIR="${DBT_PROFILES_DIR:-$LAKEHOUSE_ROOT/profiles}"
export DBT_PROJECT_DIR="${DBT_PROJECT_DIR:-$LAKEHOUSE_ROOT}"
export DO_NOT_TRACK=1
export DBT_SEND_ANONYMOUS_USAGE_STATS=false
