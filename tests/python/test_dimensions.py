"""SCD2 dimensions against the simulator's truth history: full-history
dimensions equal the true history exactly after every batch; hash-diff
snapshots equal the truth as of each run; surrogate keys are stable."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from cdc_helpers import canon, diff
from conftest import DIMENSION_STATEMENTS, WAREHOUSE_KNOBS
from lakehouse_cdc.simulator import read_versions
from scd_truth import DIMENSIONS, OPEN_END, SnapshotModel, full_history

SNAPSHOTS = {"dim_customer": "snp_customer", "dim_product": "snp_product"}
BATCHES = range(WAREHOUSE_KNOBS["batches"] + 1)


def _rows(rows: list[dict], dim: str, sk: bool = False) -> dict[tuple, dict]:
    """Versions of a dimension or snapshot, keyed by (business key, rec_eff_dt)."""
    key, _sources, tracked = DIMENSIONS[dim]
    out = {}
    for row in rows:
        if row[key] is None:
            continue  # the unknown member
        record = {c: canon(row[c]) for c in tracked}
        record["rec_exp_dt"] = canon(row["rec_exp_dt"])
        record["is_deleted"] = row["is_deleted"]
        if "is_current" in row:
            record["is_current"] = row["is_current"]
        if sk:
            record["sk"] = row[f"{dim.removeprefix('dim_')}_sk"]
        ident = (str(row[key]), canon(row["rec_eff_dt"]))
        assert ident not in out, f"{dim}: two versions {ident}"
        out[ident] = record
    return out


@pytest.fixture(scope="module")
def built(warehouse_run):
    scenario, captures = warehouse_run
    history = [{d: _rows(c[d], d, sk=True) for d in DIMENSIONS} for c in captures]
    snapshots = [{d: _rows(c[s], d) for d, s in SNAPSHOTS.items()} for c in captures]
    return scenario, history, snapshots


def test_scenario_exercises_history(simulated):
    sim = simulated(**WAREHOUSE_KNOBS)
    per_batch_key = Counter((v["batch"], v["customer_id"])
                            for v in read_versions(sim, "customer_address") if v["batch"] != "0")
    assert any(n > 1 for n in per_batch_key.values()), "no key changed twice in one batch"
    late = [v for v in read_versions(sim, "customer_master")
            if v["batch"] != "0" and v["dms_commit_ts"] < f"2025-01-01 {int(v['batch']):02d}:00"]
    assert late, "no late change to split history"


@pytest.mark.parametrize("dim", list(DIMENSIONS))
def test_full_history_dimension_equals_true_history(built, dim):
    scenario, history, _ = built
    for batch in BATCHES:
        expected = full_history(scenario.sim_dir, dim, batch)
        actual = {k: {c: v for c, v in row.items() if c != "sk"}
                  for k, row in history[batch][dim].items()}
        assert actual == expected, f"batch {batch}: " + diff(expected, actual)
    final = full_history(scenario.sim_dir, dim, BATCHES[-1])
    keys = {k for k, _ in final}
    versions = Counter(k for k, _ in final)
    assert max(versions.values()) > 2, "no key with several versions"
    if dim == "dim_customer":  # the simulator deletes customers, not products
        assert any(v["is_deleted"] for v in final.values()), "no delete in history"
    assert len(keys) > 10


@pytest.mark.parametrize("dim", list(DIMENSIONS))
def test_surrogate_keys_are_stable_across_runs(built, dim):
    _, history, _ = built
    seen: dict[tuple, str] = {}
    for batch in BATCHES:
        for ident, row in history[batch][dim].items():
            assert seen.setdefault(ident, row["sk"]) == row["sk"], (batch, ident)
    sks = [row["sk"] for row in history[-1][dim].values()]
    assert len(sks) == len(set(sks))


@pytest.mark.parametrize("dim", list(DIMENSIONS))
def test_snapshot_dimension_equals_truth_as_of_each_run(built, dim):
    scenario, _, snapshots = built
    model = SnapshotModel(dim)
    for batch in BATCHES:
        model.run(scenario.sim_dir, batch)
        expected = model.expected()
        actual = snapshots[batch][dim]
        assert actual == expected, f"run {batch}: " + diff(expected, actual)
    by_key = defaultdict(int)
    for key, _ in snapshots[-1][dim]:
        by_key[key] += 1
    assert max(by_key.values()) > 1, "snapshot never made a second version"


def test_unknown_member_row(built, spark):
    for dim, (key, _sources, _tracked) in DIMENSIONS.items():
        sk = f"{dim.removeprefix('dim_')}_sk"
        rows = spark.sql(f"select {sk}, rec_eff_dt, rec_exp_dt from t_wh_dimensions.{dim} "
                         f"where {key} is null").collect()
        assert [(r[0], canon(r[1]), canon(r[2])) for r in rows] == [
            ("-1", "1900-01-01 00:00:00.000000", OPEN_END)]


def test_dimensions_merge_on_read_and_facts_copy_on_write(built, spark):
    """meta replace_write_mode (dbt_project.yml: the dimensions): the
    dimensions' incremental MERGEs wrote delete files, and their histories
    still equal the truth (above); the facts, whose changes the marts read
    through Iceberg's changelog (no delete files there), wrote none."""
    tables = {f"t_wh_dimensions.{dim}": "merge-on-read" for dim in DIMENSIONS}
    tables.update({"t_wh_gold.fct_orders": "copy-on-write",
                   "t_wh_gold.fct_order_items": "copy-on-write"})
    for table, mode in tables.items():
        properties = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
        modes = {properties.get(f"write.{kind}.mode", "copy-on-write")
                 for kind in ("merge", "update", "delete")}
        deletes = spark.sql(f"select count(*) from {table}.snapshots "
                            "where cast(summary['added-delete-files'] as int) > 0").first()[0]
        assert modes == {mode} and (deletes > 0) == (mode == "merge-on-read"), (table, modes,
                                                                                deletes)


def test_rebuild_without_new_files_keeps_dimensions(built, spark):
    """Nothing landed: the dimensions keep their rows and get no new Iceberg
    snapshot (replace_by_key commits nothing when no key was touched), and
    do not even compute their rows: nothing is written to the scratch files
    the recomputed rows of a run go to."""
    scenario, history, _ = built

    def snapshots(dim: str) -> int:
        return spark.sql(f"select count(*) from t_wh_dimensions.{dim}.snapshots").collect()[0][0]

    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))

    def scratch(dim: str) -> list[tuple[str, int]]:
        folder = warehouse / "_cdc_scratch" / "t_wh_dimensions" / f"{dim}__replaced"
        return sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir())

    before = {dim: snapshots(dim) for dim in DIMENSIONS}
    written = {dim: scratch(dim) for dim in DIMENSIONS}
    assert all(written.values()), written  # the earlier builds wrote (and emptied) them
    scenario.build("fqn:*")
    for dim in DIMENSIONS:
        rows = [r.asDict() for r in spark.table(f"t_wh_dimensions.{dim}").collect()]
        assert _rows(rows, dim, sk=True) == history[-1][dim]
        assert snapshots(dim) == before[dim], f"{dim}: a build with nothing new committed"
        assert scratch(dim) == written[dim], f"{dim}: a build with nothing new computed its rows"


def _listed(sql: str, prefix: str) -> set[str] | None:
    """The integers of `<prefix> in (1, 2L, ...)` in `sql`, as text; None
    when no such list is there."""
    found = re.findall(re.escape(prefix) + r" in \(([0-9LSY, ]+)\)", sql)
    return None if not found else {n.strip().rstrip("LSY") for f in found for n in f.split(",")}


def test_incremental_runs_name_their_entities(built, warehouse_run, simulated, spark):
    """An incremental build recomputes a dimension's touched entities with
    them named in its SQL as constants (no subquery of the logs joined to
    every log row), and its MERGE filters the table by the same entities
    (replace_by_key_sql). The truth, computed here: every entity whose
    versions changed in that batch (the captured tables, which equal the
    true history) is named, and none is named that the batch's files did not
    change (the simulator's versions). The logs hold no truncate, so the SQL
    that applies one is left out (test_bad_input's Debezium truncate checks
    the history when a log holds one)."""
    _, captures = warehouse_run
    _, history, _ = built
    versions = {table: read_versions(simulated(**WAREHOUSE_KNOBS), table)
                for dim in DIMENSIONS for table, _ in DIMENSIONS[dim][1]}
    truncates = {table: spark.sql(f"select count(*) from t_wh_silver.slv_retail__{table}_log "
                                  "where _cdc_op = 'T'").first()[0]
                 for dim in DIMENSIONS for table, _ in DIMENSIONS[dim][1]}
    assert not any(truncates.values()), truncates
    for batch in BATCHES[1:]:
        for dim, (key, sources, _tracked) in DIMENSIONS.items():
            statements = captures[batch][DIMENSION_STATEMENTS][dim]
            [view] = [s for s in statements if "__dbt_tmp" in s.split(" as ", 1)[0]]
            [merge] = [s for s in statements if s.lstrip().lower().startswith("merge into")]
            assert "affected as (" not in view, f"batch {batch}, {dim}: the subquery"
            assert "_cdc_op = 'T'" not in view, f"batch {batch}, {dim}: the truncate branch"
            recomputed, replaced = _listed(view, f"where {key}"), _listed(merge, f"t.`{key}`")
            assert recomputed and replaced, f"batch {batch}, {dim}: no list\n{merge[:2000]}"
            assert _listed(merge, f"old.`{key}`") == replaced <= recomputed, (batch, dim)

            def by_key(rows: dict) -> dict[str, set]:
                grouped = defaultdict(set)
                for (entity, since), row in rows.items():
                    grouped[entity].add((since, tuple(sorted(row.items()))))
                return grouped

            before, after = by_key(history[batch - 1][dim]), by_key(history[batch][dim])
            changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
            touched = {str(v[key]) for table, _ in sources for v in versions[table]
                       if v["batch"] == str(batch)}
            assert changed and changed <= replaced, (batch, dim, changed - replaced)
            assert recomputed <= touched, (batch, dim, recomputed - touched)
            assert len(recomputed) < len(after), (batch, dim, "every entity named")


def test_tables_carry_the_projects_table_properties(built, spark):
    """The models' tblproperties config (dbt_project.yml: small Parquet row
    groups, so that a filter by a few keys reads a few of them) is on the
    tables both ways they are made: dbt-spark's create (the dimensions) and
    the CDC models' own (the current state and its change log's table)."""
    import yaml
    from lakehouse_cdc import PROJECT_ROOT

    wanted = yaml.safe_load((PROJECT_ROOT / "dbt_project.yml").read_text())[
        "models"]["lakehouse_cdc"]["+tblproperties"]
    wanted = {name: str(value) for name, value in wanted.items()}
    assert wanted, "dbt_project.yml sets no tblproperties"
    for table in ("t_wh_dimensions.dim_product", "t_wh_dimensions.dim_customer",
                  "t_wh_silver.slv_retail__product",
                  "t_wh_silver.slv_retail__product__cdc_changes"):
        properties = {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}
        assert {name: properties.get(name) for name in wanted} == wanted, table


def test_snapshot_kind_dimension_view(built, spark):
    """var dim_<entity>_kind=snapshot turns the dimension into a view over the
    snapshot; the generic SCD2 tests and the facts' relationship tests run on
    it as part of the build (facts are rebuilt against it)."""
    scenario, _, snapshots = built
    saved = scenario.vars
    scenario.vars = {**saved, "dim_customer_kind": "snapshot", "dim_product_kind": "snapshot"}
    try:
        scenario.build("dim_customer+ dim_product+")
    finally:
        scenario.vars = saved
    for dim in DIMENSIONS:
        rows = _rows([r.asDict() for r in spark.table(f"t_wh_dimensions.{dim}").collect()], dim)
        assert {k: {c: v for c, v in r.items() if c != "is_current"} for k, r in rows.items()} \
            == snapshots[-1][dim]
        for row in rows.values():
            assert row["is_current"] == (row["rec_exp_dt"] == OPEN_END and not row["is_deleted"])
