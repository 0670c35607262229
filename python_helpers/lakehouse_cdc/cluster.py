"""`lakehouse cluster up | down | status`: a real Spark cluster on this machine.

Starts, idempotently, everything the `cluster` dbt target talks to, bound to
127.0.0.1, with state, logs and data under one folder
(`$LAKEHOUSE_CLUSTER_HOME`, default `$LAKEHOUSE_HOME/cluster`):

    postgres/     PostgreSQL data folder: the Hive metastore database (the catalog)
    warehouse/    Iceberg table files
    logs/         one log per daemon
    conf/         spark-defaults.conf shared by every daemon
    events/       Spark event logs (which executor ran which task)
    cluster.json  ports and process ids of what runs

Daemons: PostgreSQL (Debian package), a Spark standalone master and one
worker, and the Spark Thrift server (all three from the pyspark wheel). The
Thrift server is the only driver: its executors run on the worker.

The catalog is Iceberg's SparkSessionCatalog over a Hive metastore whose
database is PostgreSQL, with Iceberg's metastore commit lock ON: the lock and
transaction tables the lock needs are created here (DataNucleus'
`autoCreateAll` creates only the metastore's core tables). README: "Why this
catalog".
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakehouse_cdc import PROJECT_ROOT

#: component -> (environment variable, default port)
PORTS = {
    "postgres": ("LAKEHOUSE_PG_PORT", 5433),
    "master": ("LAKEHOUSE_MASTER_PORT", 7077),
    "master_ui": ("LAKEHOUSE_MASTER_UI_PORT", 8080),
    "worker_ui": ("LAKEHOUSE_WORKER_UI_PORT", 8081),
    "thrift": ("LAKEHOUSE_THRIFT_PORT", 10000),
    "thrift_ui": ("LAKEHOUSE_THRIFT_UI_PORT", 4040),
}
HOST = "127.0.0.1"
PG_USER = "lakehouse"
PG_DATABASE = "metastore"
PG_JDBC_JAR = Path("/usr/share/java/postgresql.jar")
INSTALL_HINT = ("install it with `LAKEHOUSE_CLUSTER=1 . scripts/bootstrap.sh` "
                "(or `apt-get install -y postgresql libpostgresql-jdbc-java`)")

#: settings of the `local` profile that only make sense in one process over
#: embedded Derby; the cluster replaces them (README: managed clusters)
LOCAL_ONLY = {
    "spark.master", "spark.app.name", "spark.driver.memory", "spark.ui.enabled",
    "spark.sql.warehouse.dir", "spark.hadoop.javax.jdo.option.ConnectionURL",
    "spark.sql.hive.metastore.sharedPrefixes", "spark.driver.extraJavaOptions",
    "spark.hadoop.iceberg.engine.hive.lock-enabled",
}

#: The tables Hive's metastore (2.3, the client in the pyspark wheel) reads and
#: writes to grant, check, heartbeat and time out locks (TxnHandler), which
#: Iceberg's commit lock uses. Unquoted names: PostgreSQL folds them to lower
#: case, as TxnHandler's own unquoted SQL does.
LOCK_TABLES_DDL = """
create table if not exists txns (
    txn_id bigint primary key, txn_state char(1) not null, txn_started bigint not null,
    txn_last_heartbeat bigint not null, txn_user varchar(128) not null,
    txn_host varchar(128) not null, txn_agent_info varchar(128),
    txn_meta_info varchar(128), txn_heartbeat_count integer);
create table if not exists txn_components (
    tc_txnid bigint, tc_database varchar(128) not null, tc_table varchar(128),
    tc_partition varchar(767), tc_operation_type char(1) not null);
create table if not exists completed_txn_components (
    ctc_txnid bigint, ctc_database varchar(128) not null, ctc_table varchar(256),
    ctc_partition varchar(767));
create table if not exists next_txn_id (ntxn_next bigint not null);
insert into next_txn_id select 1 where not exists (select 1 from next_txn_id);
create table if not exists hive_locks (
    hl_lock_ext_id bigint not null, hl_lock_int_id bigint not null, hl_txnid bigint,
    hl_db varchar(128) not null, hl_table varchar(128), hl_partition varchar(767),
    hl_lock_state char(1) not null, hl_lock_type char(1) not null,
    hl_last_heartbeat bigint not null, hl_acquired_at bigint, hl_user varchar(128) not null,
    hl_host varchar(128) not null, hl_heartbeat_count integer, hl_agent_info varchar(128),
    hl_blockedby_ext_id bigint, hl_blockedby_int_id bigint,
    primary key (hl_lock_ext_id, hl_lock_int_id));
create index if not exists hl_txnid_index on hive_locks (hl_txnid);
create table if not exists next_lock_id (nl_next bigint not null);
insert into next_lock_id select 1 where not exists (select 1 from next_lock_id);
create table if not exists write_set (
    ws_database varchar(128) not null, ws_table varchar(128) not null,
    ws_partition varchar(767), ws_txnid bigint not null, ws_commit_id bigint not null,
    ws_operation_type char(1) not null);
create table if not exists aux_table (
    mt_key1 varchar(128) not null, mt_key2 bigint not null, mt_comment varchar(255),
    primary key (mt_key1, mt_key2));
"""


class ClusterError(RuntimeError):
    """Something the user has to change; the message says what."""


@dataclass
class Cluster:
    home: Path
    ports: dict[str, int]
    worker_cores: int = 1
    worker_memory: str = "2g"
    pids: dict[str, int] = field(default_factory=dict)

    # -- where things are -------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.home / "cluster.json"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def pgdata(self) -> Path:
        return self.home / "postgres"

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.ports['master']}"

    def url(self, component: str) -> str:
        return f"http://{HOST}:{self.ports[component]}"

    def save(self) -> None:
        self.state_file.write_text(json.dumps(
            {"ports": self.ports, "pids": self.pids, "worker_cores": self.worker_cores,
             "worker_memory": self.worker_memory}, indent=2))


def cluster_home() -> Path:
    default = Path(os.environ.get("LAKEHOUSE_HOME", PROJECT_ROOT / ".lakehouse")) / "cluster"
    return Path(os.environ.get("LAKEHOUSE_CLUSTER_HOME", default)).resolve()


def load(home: Path | None = None, overrides: dict[str, int] | None = None) -> Cluster:
    """The cluster recorded under `home` (ports, pids), else one from the environment."""
    home = home or cluster_home()
    recorded: dict[str, Any] = {}
    state = home / "cluster.json"
    if state.exists():
        recorded = json.loads(state.read_text())
    # a running cluster keeps its ports; otherwise options > environment >
    # the ports it last ran on > defaults
    ports = {name: default for name, (_env, default) in PORTS.items()}
    ports.update(recorded.get("ports", {}))
    if not any(_alive(pid) for pid in recorded.get("pids", {}).values()):
        ports.update({name: int(os.environ[env]) for name, (env, _d) in PORTS.items()
                      if os.environ.get(env)})
        ports.update(overrides or {})
    return Cluster(home=home, ports=ports, pids=recorded.get("pids", {}),
                   worker_cores=int(os.environ.get("LAKEHOUSE_WORKER_CORES", 1)),
                   worker_memory=os.environ.get("LAKEHOUSE_WORKER_MEMORY", "2g"))


# -- checks ---------------------------------------------------------------
def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with contextlib.suppress(OSError):  # a zombie child is not alive
        if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return False
    return True


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def ui_json(url: str, timeout: float = 3) -> Any:
    """A Spark UI's JSON (a loopback read). The product polls inside a wait
    loop, so a short read retries; a one-off read (the cluster test's) may
    wait longer: the UIs answer within a second on an idle machine, but took
    over 5 s with the two cores shared in a slow hour (2026-12-02)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback)
        return json.load(response)


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    if not found:
        raise ClusterError(f"PostgreSQL is not installed: {INSTALL_HINT}")
    return found[-1].parent


def _preflight(cluster: Cluster, starting: list[str]) -> None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ClusterError("Java is missing: `apt-get install -y openjdk-17-jre-headless` "
                           "(scripts/bootstrap.sh does it)")
    _pg_bin()
    import importlib.util

    if importlib.util.find_spec("pyhive") is None:
        raise ClusterError("dbt-spark's thrift client (PyHive) is missing: "
                           "run `LAKEHOUSE_CLUSTER=1 . scripts/bootstrap.sh`")
    if not PG_JDBC_JAR.exists():
        raise ClusterError(f"the PostgreSQL JDBC driver ({PG_JDBC_JAR}) is missing: {INSTALL_HINT}")
    for component in starting:
        if port_open(cluster.ports[component]):
            env = PORTS[component][0]
            raise ClusterError(
                f"port {cluster.ports[component]} ({component}) on {HOST} is in use by another "
                f"program: pick another with {env}=<port> or --{component.replace('_', '-')}-port")


# -- PostgreSQL -------------------------------------------------------------
def _as_postgres(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its programs as user postgres."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str], what: str, **kwargs: Any) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise ClusterError(f"{what} failed ({' '.join(cmd)}):\n{done.stderr or done.stdout}")
    return done.stdout


def _psql(cluster: Cluster, sql: str, database: str = PG_DATABASE) -> str:
    return _run([str(_pg_bin() / "psql"), "-h", HOST, "-p", str(cluster.ports["postgres"]),
                 "-U", PG_USER, "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                f"psql on {database}")


def _start_postgres(cluster: Cluster) -> None:
    pg = _pg_bin()
    socket_dir = cluster.home / "pgsock"
    fresh = not (cluster.pgdata / "PG_VERSION").exists()
    for folder in (cluster.pgdata, socket_dir):
        folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
            folder.chmod(0o700)
    if os.geteuid() == 0:
        probe = subprocess.run(_as_postgres(["test", "-w", str(cluster.pgdata)]))
        if probe.returncode != 0:
            raise ClusterError(
                f"user postgres cannot reach {cluster.pgdata} (a parent folder is private): "
                "set LAKEHOUSE_CLUSTER_HOME to a folder whose parents others may traverse "
                "(chmod o+x), e.g. under /srv or /var/tmp")
    if fresh:
        _run(_as_postgres([str(pg / "initdb"), "-D", str(cluster.pgdata), "-A", "trust",
                           "-U", PG_USER, "-E", "UTF8", "--no-sync"]), "initdb")
    options = (f"-p {cluster.ports['postgres']} -k {socket_dir} -c listen_addresses={HOST} "
               "-c fsync=off -c max_connections=200")
    log = cluster.logs / "postgres.log"
    log.touch()
    if os.geteuid() == 0:
        shutil.chown(log, "postgres", "postgres")
    _run(_as_postgres([str(pg / "pg_ctl"), "-D", str(cluster.pgdata), "-l", str(log),
                       "-o", options, "-w", "-t", "60", "start"]), "PostgreSQL start")
    pid = int((cluster.pgdata / "postmaster.pid").read_text().split()[0])
    cluster.pids["postgres"] = pid
    exists = _psql(cluster, f"select 1 from pg_database where datname = '{PG_DATABASE}'",
                   database="postgres")
    if not exists.strip():
        _psql(cluster, f"create database {PG_DATABASE}", database="postgres")
    _psql(cluster, LOCK_TABLES_DDL)


# -- Spark ------------------------------------------------------------------
def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _jars() -> list[str]:
    from lakehouse_cdc.spark import spark_conf

    jars = [j for j in spark_conf("local").get("spark.jars", "").split(",") if j]
    resolved = [str(p if (p := Path(j)).is_absolute() else (PROJECT_ROOT / p).resolve())
                for j in jars]
    return [*resolved, str(PG_JDBC_JAR)]


def server_conf(cluster: Cluster) -> dict[str, str]:
    """spark-defaults of every daemon: the `local` profile's Iceberg settings
    without the ones that only suit one process over Derby, plus the shared
    catalog on PostgreSQL and the cluster's own addresses."""
    from lakehouse_cdc.spark import spark_conf

    conf = {k: v for k, v in spark_conf("local").items() if k not in LOCAL_ONLY}
    jdbc = f"jdbc:postgresql://{HOST}:{cluster.ports['postgres']}/{PG_DATABASE}"
    conf.update({
        "spark.master": cluster.master_url,
        "spark.jars": ",".join(_jars()),
        # the Thrift server's sessions resolve `using iceberg` and the JDBC
        # driver through the driver's own classpath; executors get spark.jars
        "spark.driver.extraClassPath": ":".join(_jars()),
        "spark.sql.warehouse.dir": str(cluster.home / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": jdbc,
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "spark.hadoop.javax.jdo.option.ConnectionUserName": PG_USER,
        "spark.hadoop.javax.jdo.option.ConnectionPassword": "",
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        # Spark's isolated Hive client must load the driver from the app's jars
        "spark.sql.hive.metastore.sharedPrefixes": "org.postgresql",
        # Iceberg's commit lock in the metastore stays ON (its default): two
        # processes committing to one table are serialized, none is lost
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "true",
        # several processes commit: every query reads the table's latest commit
        "spark.sql.catalog.spark_catalog.cache-enabled": "false",
        "spark.executor.cores": str(cluster.worker_cores),
        "spark.executor.memory": os.environ.get("LAKEHOUSE_EXECUTOR_MEMORY", "1g"),
        "spark.cores.max": str(cluster.worker_cores),
        "spark.ui.enabled": "true",
        "spark.ui.port": str(cluster.ports["thrift_ui"]),
        "spark.ui.showConsoleProgress": "false",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(cluster.home / "events"),
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.sql.hive.thriftServer.singleSession": "false",
    })
    return conf


def _spark_env(cluster: Cluster) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(cluster.home / "conf"),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOG_DIR": str(cluster.logs),
        "SPARK_WORKER_DIR": str(cluster.home / "work"),
        "SPARK_NO_DAEMONIZE": "1",
    })
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return env


def _launch(cluster: Cluster, name: str, cmd: list[str]) -> None:
    log = open(cluster.logs / f"{name}.log", "ab")  # noqa: SIM115 (owned by the child)
    process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env=_spark_env(cluster), cwd=cluster.home, start_new_session=True)
    cluster.pids[name] = process.pid
    cluster.save()


def _wait(what: str, ready: Any, cluster: Cluster, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    log = cluster.logs / f"{name}.log"
    while time.monotonic() < deadline:
        if ready():
            return
        if name and not _alive(cluster.pids.get(name)):
            raise ClusterError(f"{what} exited while starting; see {log}")
        time.sleep(0.5)
    raise ClusterError(f"{what} not ready after {timeout:.0f}s; see {log}")


def _master_state(cluster: Cluster) -> dict[str, Any] | None:
    try:
        return ui_json(cluster.url("master_ui") + "/json/")
    except OSError:
        return None


def _alive_workers(cluster: Cluster) -> int:
    state = _master_state(cluster) or {}
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def patch_pyhive() -> None:
    """Let PyHive 0.7 (its last release) read Spark 3.5's Thrift answers.

    For a statement without output (DDL, INSERT, MERGE) Spark 3.5's Thrift
    server returns a row set whose `columns` is unset where Spark 3.3 sent an
    empty column; PyHive iterates it and fails with "'NoneType' object is not
    iterable" (apache/kyuubi#7106), which breaks every dbt `run_query` of a
    DDL. An unset column list is read as no rows. Idempotent.
    """
    from TCLIService import TCLIService

    original = TCLIService.Client.FetchResults
    if getattr(original, "_lakehouse_patched", False):
        return

    def fetch_results(self: Any, req: Any) -> Any:
        response = original(self, req)
        results = getattr(response, "results", None)
        if results is not None and results.columns is None and not results.rows:
            results.columns = []
        return response

    fetch_results._lakehouse_patched = True  # type: ignore[attr-defined]
    TCLIService.Client.FetchResults = fetch_results


def prepare_thrift_client() -> None:
    """Before dbt talks to a Thrift server from this process: fix PyHive, and
    name this user and machine for the build lock's messages."""
    import getpass

    patch_pyhive()
    os.environ.setdefault("LAKEHOUSE_LOCK_OWNER", f"{getpass.getuser()}@{socket.gethostname()}")


def thrift_query(sql: str, port: int | None = None, fetch: bool = True) -> list[tuple]:
    """Run one statement through the Thrift server (PyHive), return its rows."""
    from pyhive import hive

    patch_pyhive()
    port = port or load().ports["thrift"]
    with contextlib.closing(hive.connect(host=HOST, port=port, username="lakehouse")) as conn:
        cursor = conn.cursor()
        cursor.execute(sql)
        return cursor.fetchall() if fetch and cursor.description else []


def _thrift_ready(cluster: Cluster) -> bool:
    if not port_open(cluster.ports["thrift"]):
        return False
    try:
        return thrift_query("select 1", cluster.ports["thrift"]) == [(1,)]
    except Exception:  # noqa: BLE001 (not up yet)
        return False


def _create_metastore_tables(cluster: Cluster) -> None:
    """Make DataNucleus create the metastore's tables now, in an order that
    cannot deadlock, from one process before several clients start.

    `autoCreateAll` creates a table when it is first used. TBL_PRIVS is
    first used when a Hive table is created (owner grants), inside the
    transaction that has just inserted into TBLS; the ALTER TABLE adding
    TBL_PRIVS' foreign key to TBLS then waits on that very transaction
    forever (seen on PostgreSQL). Dropping a table reads the privilege tables
    before it writes anything, so a create + drop creates them safely.
    """
    statements = [
        "create database if not exists lakehouse_cluster_check",
        "create table if not exists lakehouse_cluster_check.probe (ok int) using iceberg",
        "drop table lakehouse_cluster_check.probe",
        "create table lakehouse_cluster_check.probe_csv (ok string) using csv",
        "create or replace view lakehouse_cluster_check.probe_view as select 1 as ok",
        "drop view lakehouse_cluster_check.probe_view",
        "drop table lakehouse_cluster_check.probe_csv",
        "drop database lakehouse_cluster_check",
    ]
    for sql in statements:
        thrift_query(sql, port=cluster.ports["thrift"], fetch=False)


def up(cluster: Cluster, timeout: float = 180) -> Cluster:
    """Start what is not running; return when the Thrift server answers SQL."""
    for folder in ("logs", "conf", "events", "work", "warehouse"):
        (cluster.home / folder).mkdir(parents=True, exist_ok=True)
    order = ["postgres", "master", "worker", "thrift"]
    to_start = [c for c in order if not _alive(cluster.pids.get(c))]
    if not to_start:
        return cluster
    ports_of = {"postgres": ["postgres"], "master": ["master", "master_ui"],
                "worker": ["worker_ui"], "thrift": ["thrift", "thrift_ui"]}
    _preflight(cluster, [p for c in to_start for p in ports_of[c]])
    conf = server_conf(cluster)
    (cluster.home / "conf" / "spark-defaults.conf").write_text(
        "".join(f"{k} {v}\n" for k, v in sorted(conf.items())))
    spark_class = str(spark_home() / "bin" / "spark-class")
    if "postgres" in to_start:
        _start_postgres(cluster)
        cluster.save()
    if "master" in to_start:
        _launch(cluster, "master", [spark_class, "org.apache.spark.deploy.master.Master",
                                    "--host", HOST, "--port", str(cluster.ports["master"]),
                                    "--webui-port", str(cluster.ports["master_ui"])])
        _wait("Spark master", lambda: _master_state(cluster) is not None, cluster, "master", 60)
    if "worker" in to_start:
        _launch(cluster, "worker", [spark_class, "org.apache.spark.deploy.worker.Worker",
                                    "--host", HOST, "--cores", str(cluster.worker_cores),
                                    "--memory", cluster.worker_memory,
                                    "--webui-port", str(cluster.ports["worker_ui"]),
                                    "--work-dir", str(cluster.home / "work"),
                                    cluster.master_url])
        _wait("Spark worker", lambda: _alive_workers(cluster) >= 1, cluster, "worker", 60)
    if "thrift" in to_start:
        _launch(cluster, "thrift", [
            str(spark_home() / "bin" / "spark-submit"),
            "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
            "--name", "lakehouse-thrift",
            "--driver-memory", os.environ.get("LAKEHOUSE_THRIFT_DRIVER_MEMORY", "1g"),
            "--hiveconf", f"hive.server2.thrift.port={cluster.ports['thrift']}",
            "--hiveconf", f"hive.server2.thrift.bind.host={HOST}",
            "spark-internal"])
        _wait("Spark Thrift server", lambda: _thrift_ready(cluster), cluster, "thrift", timeout)
        _create_metastore_tables(cluster)
    cluster.save()
    return cluster


def _stop_pid(pid: int, timeout: float = 20) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def down(cluster: Cluster) -> list[str]:
    """Stop what runs (Thrift server, worker, master, PostgreSQL); data stays."""
    stopped = []
    for name in ("thrift", "worker", "master"):
        pid = cluster.pids.pop(name, None)
        if _alive(pid):
            _stop_pid(pid)
            stopped.append(name)
    if _alive(cluster.pids.get("postgres")):
        _run(_as_postgres([str(_pg_bin() / "pg_ctl"), "-D", str(cluster.pgdata), "-m", "fast",
                           "-w", "stop"]), "PostgreSQL stop")
        stopped.append("postgres")
    cluster.pids.pop("postgres", None)
    if cluster.home.exists():
        cluster.save()
    return stopped


def status(cluster: Cluster) -> dict[str, dict[str, Any]]:
    checks = {
        "postgres": lambda: port_open(cluster.ports["postgres"]),
        "master": lambda: _master_state(cluster) is not None,
        "worker": lambda: _alive_workers(cluster) >= 1,
        "thrift": lambda: _thrift_ready(cluster),
    }
    where = {"postgres": f"{HOST}:{cluster.ports['postgres']}", "master": cluster.master_url,
             "worker": cluster.url("worker_ui"), "thrift": f"{HOST}:{cluster.ports['thrift']}"}
    report = {}
    for name, check in checks.items():
        running = _alive(cluster.pids.get(name))
        report[name] = {"running": running, "ready": running and check(),
                        "pid": cluster.pids.get(name), "address": where[name]}
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("up", "down", "status"))
    for name, (env, default) in PORTS.items():
        parser.add_argument(f"--{name.replace('_', '-')}-port", type=int, metavar="PORT",
                            dest=f"port_{name}", help=f"default ${env} or {default}")
    parser.add_argument("--timeout", type=float, default=180,
                        help="seconds to wait for the Thrift server (default 180)")


DESCRIPTION = (
    "Start (up), stop (down) or show (status) a Spark standalone cluster on this machine: "
    "PostgreSQL as the shared Hive metastore database, one master, one worker "
    "($LAKEHOUSE_WORKER_CORES cores, $LAKEHOUSE_WORKER_MEMORY), the Spark Thrift server, all "
    "on 127.0.0.1. State, data and logs live in $LAKEHOUSE_CLUSTER_HOME (default "
    "$LAKEHOUSE_HOME/cluster). Then: DBT_TARGET=cluster lakehouse run.")


def main(args: argparse.Namespace) -> int:
    overrides = {name: getattr(args, f"port_{name}") for name in PORTS
                 if getattr(args, f"port_{name}", None)}
    cluster = load(overrides=overrides)
    try:
        if args.action == "up":
            started = time.monotonic()
            up(cluster, timeout=args.timeout)
            print(f"[cluster] up in {time.monotonic() - started:.0f}s: Thrift server "
                  f"{HOST}:{cluster.ports['thrift']}, master {cluster.url('master_ui')}, "
                  f"logs {cluster.logs}")
            print(f"[cluster] use it: DBT_TARGET=cluster LAKEHOUSE_THRIFT_PORT="
                  f"{cluster.ports['thrift']} lakehouse run")
        elif args.action == "down":
            stopped = down(cluster)
            print("[cluster] stopped: " + (", ".join(stopped) or "nothing was running")
                  + f" (data kept in {cluster.home})")
        else:
            report = status(cluster)
            for name, entry in report.items():
                state = ("ready" if entry["ready"] else "running, not ready" if entry["running"]
                         else "stopped")
                print(f"{name:<9} {state:<19} {entry['address']}  pid {entry['pid'] or '-'}")
            return 0 if all(e["ready"] for e in report.values()) else 3
    except ClusterError as error:
        print(f"[cluster] error: {error}", file=sys.stderr)
        return 2
    return 0


__all__ = ["Cluster", "ClusterError", "add_arguments", "down", "load", "main", "server_conf",
           "status", "thrift_query", "up"]


def _same(value: Any) -> Any:
    return value


#: HiveServer2 sends dates as text (PyHive itself parses decimals and timestamps):
#: read them as Spark's Python API would
def _date(value: Any) -> Any:
    return datetime.date.fromisoformat(value) if isinstance(value, str) else value


_FROM_TEXT: dict[str, Any] = {"DATE_TYPE": _date}


class ThriftTables:
    """Tables read through the Thrift server, for `lakehouse run` and
    `lakehouse quality` on the cluster target: `sql()` returns rows as dicts,
    `table()` a pandas DataFrame (Great Expectations validates it). No Spark
    runs in this process."""

    kind = "pandas"

    def __init__(self, port: int | None = None) -> None:
        self.port = port or int(os.environ.get("LAKEHOUSE_THRIFT_PORT") or load().ports["thrift"])
        patch_pyhive()

    def sql(self, query: str) -> list[dict[str, Any]]:
        from pyhive import hive

        with contextlib.closing(hive.connect(host=os.environ.get("LAKEHOUSE_THRIFT_HOST", HOST),
                                             port=self.port, username="lakehouse")) as conn:
            cursor = conn.cursor()
            cursor.execute(query)
            if not cursor.description:
                return []
            names = [d[0].split(".")[-1] for d in cursor.description]
            parse = [_FROM_TEXT.get(d[1], _same) for d in cursor.description]
            return [{n: None if v is None else p(v) for n, p, v in zip(names, parse, row,
                                                                        strict=True)}
                    for row in cursor.fetchall()]

    def table_exists(self, schema: str, table: str) -> bool:
        return bool(self.sql(f"show tables in {schema} like '{table}'"))

    def columns(self, name: str) -> dict[str, str]:
        """Column name -> type, as `describe` lists them before its first
        blank or `#` line (partitioning and metadata follow)."""
        out = {}
        for row in self.sql(f"describe {name}"):
            if not row["col_name"] or row["col_name"].startswith("#"):
                break
            out[row["col_name"]] = row["data_type"]
        return out

    def table(self, name: str) -> Any:
        """The whole table as pandas, typed: HiveServer2 sends decimals and
        timestamps as text."""
        import pandas as pd

        types = self.columns(name)
        frame = pd.DataFrame(self.sql(f"select * from {name}"), columns=list(types))
        for column, data_type in types.items():
            if data_type.startswith("decimal"):
                frame[column] = pd.to_numeric(frame[column])
            elif data_type.startswith("timestamp") or data_type == "date":
                frame[column] = pd.to_datetime(frame[column])
        return frame


def tables_for_target() -> Any:
    """Where a command reads the tables dbt wrote: this process's Spark on
    the local target; on another (DBT_TARGET), the Thrift server dbt talks
    to (use_cluster_target), with no Spark here."""
    if os.environ.get("DBT_TARGET", "local") == "local":
        from lakehouse_cdc.spark import get_spark

        return get_spark()
    return use_cluster_target()


def use_cluster_target() -> ThriftTables:
    """For DBT_TARGET=cluster: check the Thrift server answers, point the
    profile at its port, prepare this process's dbt for it (PyHive fixed,
    the lock's owner named); return a reader over Thrift."""
    prepare_thrift_client()
    cluster = load()
    os.environ.setdefault("LAKEHOUSE_THRIFT_PORT", str(cluster.ports["thrift"]))
    port = int(os.environ["LAKEHOUSE_THRIFT_PORT"])
    host = os.environ.get("LAKEHOUSE_THRIFT_HOST", HOST)
    if host == HOST and not port_open(port):
        raise ClusterError(f"no Spark Thrift server on {host}:{port}: start one with "
                           "`lakehouse cluster up` (or set LAKEHOUSE_THRIFT_HOST/PORT)")
    return ThriftTables(port)
