"""Project structure (every model documented and tested, names hold the
scheme, source() only where bronze is read, gold reads through ref()) and
dbt tests that catch broken data (duplicate key, fact without dimension)."""

from __future__ import annotations

import json
import re
import time

import pytest
from lakehouse_cdc.dbt_runner import DbtError, run_dbt

NAMING = {
    "silver": r"^(slv_[a-z0-9]+__[a-z0-9_]+|int_[a-z0-9]+__[a-z0-9_]+)$",
    "dimensions": r"^dim_[a-z0-9_]+$",
    "gold": r"^(fct|mart)_[a-z0-9_]+$",
}


@pytest.fixture(scope="module")
def manifest(spark, tmp_path_factory):
    target = tmp_path_factory.mktemp("parse")
    # build_snapshots: the models nothing reads by default are checked too
    run_dbt(["parse"], target_path=target, vars={"build_snapshots": True})
    return json.loads((target / "manifest.json").read_text())


def test_models_nothing_reads_by_default_are_disabled(spark, tmp_path):
    """The snapshot kind's snapshot and the view feeding it are built only when
    the dimension uses that kind (or var build_snapshots is set): with
    dim_customer_kind=snapshot, the customer's are enabled, the product's not."""
    run_dbt(["parse"], target_path=tmp_path, vars={"dim_customer_kind": "snapshot"})
    parsed = json.loads((tmp_path / "manifest.json").read_text())
    project = "lakehouse_cdc"
    assert {f"snapshot.{project}.snp_customer", f"model.{project}.int_customer__current"} \
        <= set(parsed["nodes"])
    off = {f"snapshot.{project}.snp_product", f"model.{project}.int_product__current"}
    assert off <= set(parsed["disabled"]), sorted(parsed["disabled"])
    assert not off & set(parsed["nodes"])


def _models(manifest):
    return [n for n in manifest["nodes"].values() if n["resource_type"] in ("model", "snapshot")]


def test_every_model_and_column_is_documented(manifest):
    missing = []
    for node in _models(manifest):
        if not node["description"].strip():
            missing.append(node["unique_id"])
        if not node["columns"]:
            missing.append(f"{node['unique_id']}: no columns documented")
        missing += [f"{node['unique_id']}.{c}" for c, v in node["columns"].items()
                    if not v["description"].strip()]
    for source in manifest["sources"].values():
        if not source["description"].strip():
            missing.append(source["unique_id"])
        missing += [f"{source['unique_id']}.{c}" for c, v in source["columns"].items()
                    if not v["description"].strip()]
    assert not missing, missing


def test_every_model_has_a_tested_primary_key(manifest):
    tested: dict[str, set] = {}
    for node in manifest["nodes"].values():
        if node["resource_type"] != "test":
            continue
        name = node["test_metadata"]["name"] if node.get("test_metadata") else "singular"
        for parent in node["depends_on"]["nodes"]:
            tested.setdefault(parent, set()).add(name)
    untested = []
    for node in _models(manifest):
        if node["resource_type"] == "snapshot":
            continue
        kinds = tested.get(node["unique_id"], set())
        if not ({"primary_key", "unique", "unique_combination"} & kinds):
            untested.append(node["unique_id"])
    assert not untested, f"models without a uniqueness test: {untested}"


def test_names_follow_the_layer_scheme(manifest):
    wrong = []
    for node in _models(manifest):
        if node["resource_type"] != "model":
            continue
        layer = node["fqn"][1]
        pattern = NAMING.get(layer)
        if pattern is None or not re.match(pattern, node["name"]):
            wrong.append((layer, node["name"]))
    assert not wrong, wrong


def test_source_only_in_the_bronze_reading_layer_and_gold_reads_through_ref(manifest):
    offenders = []
    for node in _models(manifest):
        if node["resource_type"] != "model":
            continue
        sources = [d for d in node["depends_on"]["nodes"] if d.startswith("source.")]
        # silver/<source system>/ reads bronze; silver/intermediate/ does not
        if sources and (node["fqn"][1] != "silver" or node["fqn"][2] == "intermediate"):
            offenders.append((node["name"], "source() outside silver/<source system>"))
        if node["fqn"][1] == "gold":
            for parent in node["depends_on"]["nodes"]:
                parent_node = manifest["nodes"].get(parent)
                layer = parent_node["fqn"][1] if parent_node else "source"
                if parent_node and parent_node["resource_type"] in ("snapshot", "seed"):
                    continue
                if layer not in ("silver", "dimensions", "gold"):
                    offenders.append((node["name"], f"reads {parent}"))
    assert not offenders, offenders


def test_every_source_has_freshness(manifest):
    stale = [s["unique_id"] for s in manifest["sources"].values()
             if not (s.get("freshness") or {}).get("error_after", {}).get("count")
             or not s.get("loaded_at_field")]
    assert not stale, stale


def _test_outcomes(model: str, scenario, spark=None, table: str | None = None
                   ) -> dict[str, str]:
    if spark is not None and table is not None:
        # drop any cached state of the table we just changed, so dbt reads it anew
        spark.sql(f"refresh table {table}")
        # and drop data other tests cached in this session (Great Expectations
        # persisted whole tables): dbt's test would read that stale copy
        spark.catalog.clearCache()
    result = run_dbt(["test", "--select", model], schema=scenario.schema,
                     vars={"landing_root": str(scenario.landing)},
                     target_path=scenario.target_path, expect_success=False)
    return {r.node.name: str(r.status) for r in result.result.results
            if r.node.resource_type == "test"}


def test_duplicate_key_in_silver_fails_its_test(warehouse_run, spark):
    scenario, _ = warehouse_run
    table = f"{scenario.schema}_silver.slv_retail__orders"
    before = _test_outcomes("slv_retail__orders", scenario)
    assert all(s == "pass" for s in before.values()), before
    original = spark.sql(f"select * from {table} limit 1")
    row = original.collect()
    original = spark.createDataFrame(row, original.schema)
    original.writeTo(table).append()  # the duplicate
    try:
        outcomes = _test_outcomes("slv_retail__orders", scenario, spark, table)
    finally:
        spark.sql(f"delete from {table} where order_id = {row[0].order_id}")
        original.writeTo(table).append()
    assert outcomes["primary_key_slv_retail__orders_order_id"] == "fail"


def test_fact_without_dimension_fails_its_test(warehouse_run, spark):
    scenario, _ = warehouse_run
    table = f"{scenario.schema}_gold.fct_orders"
    # an order without lines (amount 0), so only the dimension is missing
    spark.sql(f"insert into {table} select order_id + 100000000, customer_id, 'no-such-version', "
              f"order_ts, order_date, date_key, status, is_cancelled, 0, 0 "
              f"from {table} limit 1")
    try:
        outcomes = _test_outcomes("fct_orders", scenario, spark, table)
    finally:
        spark.sql(f"delete from {table} where customer_sk = 'no-such-version'")
    failing = {name for name, status in outcomes.items() if status == "fail"}
    assert failing == {"relationships_fct_orders_customer_sk__customer_sk__ref_dim_customer_"}


def _run_tests(scenario, logs, selection: list[str], extra_vars: dict
               ) -> tuple[dict[str, str], set[str], str]:
    """`dbt test` of `selection`: each test's outcome, the tests whose pass was
    reused (the log says so), and the log."""
    result = run_dbt(["test", "--select", *selection, "--log-path", str(logs)],
                     schema=scenario.schema, target_path=scenario.target_path,
                     vars={"landing_root": str(scenario.landing), **extra_vars},
                     expect_success=False)
    outcomes = {r.node.name: str(r.status) for r in result.result.results
                if r.node.resource_type == "test"}
    log = (logs / "dbt.log").read_text()
    return outcomes, set(re.findall(r"(\w+): pass reused", log)), log


def test_a_data_test_pass_is_reused_only_while_its_table_is_unchanged(warehouse_run, spark,
                                                                       tmp_path):
    """A data test that passed is not run again while the table it reads is
    as when it passed: same Iceberg snapshot, same columns. A write, a column
    added without a write, a failure, or `reuse_test_passes: false` runs it."""
    scenario, _ = warehouse_run
    table = f"{scenario.schema}_silver.slv_retail__orders"
    runs = iter(range(100))

    queries = []  # per run: the result-row queries (`... as failures`) dbt sent to Spark

    def test(**extra_vars) -> tuple[dict[str, str], set[str]]:
        """Each data test of the table and its outcome; those reused (its log)."""
        # (the model's unit test is reused too: test_unit_tests.py)
        outcomes, reused, log = _run_tests(scenario, tmp_path / f"run{next(runs)}",
                                           ["slv_retail__orders,test_type:data"], extra_vars)
        queries.append(len(re.findall(r"\bas failures\b", log)))
        return outcomes, reused

    def snapshot() -> int:
        return spark.sql(f"select snapshot_id from {table}.snapshots "
                         "order by committed_at desc limit 1").first()[0]

    first, _ = test()
    assert len(first) == 3 and set(first.values()) == {"pass"}, first
    outcomes, reused = test()
    assert outcomes == first and reused == set(first)  # nothing changed: every pass reused
    [written] = (scenario.target_path / "run").rglob("primary_key_slv_retail__orders_order_id.sql")
    assert "pass reused" in written.read_text() and "failures" not in written.read_text()
    outcomes, reused = test(reuse_test_passes=False)
    assert outcomes == first and reused == set()
    # a reused test sends no query: one passing row read for the whole run,
    # against a query per test when they run
    assert queries[1:] == [1, 3], queries

    row = spark.sql(f"select * from {table} order by order_id limit 1")
    row = spark.createDataFrame(row.collect(), row.schema)
    spark.sql(f"delete from {table} where order_id = {row.first().order_id}")
    try:
        outcomes, reused = test()  # a write, every rule still holds: run, pass
        assert outcomes == first and reused == set()
        before = snapshot()
        spark.sql(f"alter table {table} add column reuse_probe int")
        try:
            assert snapshot() == before  # a new column, no new snapshot
            outcomes, reused = test()
            assert outcomes == first and reused == set()
        finally:
            spark.sql(f"alter table {table} drop column reuse_probe")
    finally:
        row.writeTo(table).append()

    row.writeTo(table).append()  # the duplicate key
    try:
        for _ in range(2):  # a failure is not recorded: the test runs and fails again
            outcomes, reused = test()
            assert outcomes["primary_key_slv_retail__orders_order_id"] == "fail", outcomes
            assert "primary_key_slv_retail__orders_order_id" not in reused
    finally:
        spark.sql(f"delete from {table} where order_id = {row.first().order_id}")
        row.writeTo(table).append()


def test_a_data_test_on_a_view_is_reused_only_while_the_view_and_what_it_reads_are_unchanged(
        warehouse_run, spark, tmp_path):
    """A test on a view (a change log reads its model's kept changes by name;
    dim_date reads nothing) reuses its pass while the view's text and each
    table it reads are unchanged. A repeat written into the kept changes
    runs the change log's tests (the repeat fails its test); the date
    dimension built with other SQL runs its tests."""
    scenario, _ = warehouse_run
    kept = f"{scenario.schema}_silver.slv_retail__product__cdc_changes"
    repeat_test = ("unique_combination_slv_retail__product_log_product_id___cdc_phase___"
                   "cdc_commit_t")
    runs = iter(range(100))

    def test(**extra_vars) -> tuple[dict[str, str], set[str]]:
        outcomes, reused, _ = _run_tests(
            scenario, tmp_path / f"run{next(runs)}",
            ["slv_retail__product_log,test_type:data", "dim_date,test_type:data"], extra_vars)
        return outcomes, reused

    first, _ = test()
    log_tests = {name for name in first if "product_log" in name}
    date_tests = set(first) - log_tests
    assert len(log_tests) == 3 and len(date_tests) >= 3, first
    assert set(first.values()) == {"pass"}, first
    assert any(name.startswith(repeat_test) for name in log_tests), log_tests
    outcomes, reused = test()
    assert outcomes == first and reused == set(first)  # nothing changed: every pass reused
    outcomes, reused = test(reuse_test_passes=False)
    assert outcomes == first and reused == set()

    before = spark.sql(f"select snapshot_id from {kept}.history "
                       "where is_current_ancestor order by made_current_at desc").first()[0]
    row = spark.sql(f"select * from {kept} where product_id is not null limit 1")
    spark.createDataFrame(row.collect(), row.schema).writeTo(kept).append()  # kept twice
    repeat = {name for name in log_tests if name.startswith(repeat_test)}
    try:
        outcomes, reused = test()  # a write: the change log's tests run, the repeat fails
        assert {n for n, status in outcomes.items() if status == "fail"} == repeat, outcomes
        assert reused == date_tests
        outcomes, reused = test()  # a failure is not recorded: it runs and fails again
        assert {n for n, status in outcomes.items() if status == "fail"} == repeat, outcomes
        assert reused == set(first) - repeat  # (the others passed on this snapshot)
    finally:
        spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{kept}', {before})")
    # the snapshot the repeat's test passed on is current again: reused (one
    # pass is kept per test: the others' is now that of the snapshot rolled back)
    outcomes, reused = test()
    assert outcomes == first and reused == date_tests | repeat
    outcomes, reused = test()
    assert outcomes == first and reused == set(first)

    # the date dimension's view built with another end date (a var), then as
    # before: its tests run each time (one pass is kept per test), then are reused
    try:
        _build_dim_date(scenario, "2031-12-31")
        outcomes, reused = test()
        assert outcomes == first and reused == log_tests
    finally:
        _build_dim_date(scenario, None)
    outcomes, reused = test()
    assert outcomes == first and reused == log_tests
    outcomes, reused = test()
    assert outcomes == first and reused == set(first)


def test_a_view_whose_reads_the_key_cannot_see_keeps_its_tests_running(warehouse_run):
    """`_test_view_state` keys a view only when it sees every read of the
    view's SQL: the views that read anything else, or read in a shape it
    does not parse (each a way a test on it could be reused after what it
    reads changed), get no key, so their tests run."""
    scenario, _ = warehouse_run
    kept = f"{scenario.schema}_silver.slv_retail__product__cdc_changes"
    texts = {
        "common table expressions only": (
            "with d as (select 1 as a), e as (select a from d) select * from e", True),
        "a table of the project's schemas": (f"select * from {kept}", True),
        "joined with itself": (f"select * from {kept} a join {kept} b on a.product_id = "
                               "b.product_id", True),
        "another schema": ("select * from default.raw", False),
        "a source's bronze view": (f"select * from {scenario.schema}_bronze.product", False),
        "a comma join": (f"select * from {kept} k, default.raw r", False),
        "a subquery": (f"select * from (select * from {kept}) s", False),
        "a comment": ("select * from /* the feed */ default.raw", False),
        "a line comment": (f"select * from {kept} -- default.raw\n", False),
        "no space": ("select * from`default`.raw", False),
        "table": (f"select * from {kept} union all table default.raw", False),
        "time travel": (f"select * from {kept} version as of 1", False),
        "tablesample": (f"select * from {kept} tablesample (10 percent)", False),
        "a changing function": (f"select current_user() as u, * from {kept}", False),
        "a catalog": (f"select * from spark_catalog.{kept}", False),
        "a backticked name": (f"select * from {scenario.schema}_silver.`orders-eu`", False),
        "values": ("select * from values (1) as t(a)", False),
    }
    inline = ("{% if execute %}{% set view = api.Relation.create(schema='probe', identifier='v') %}"
              "{% for name, text in var('view_texts').items() %}{{ name }}="
              "{{ _test_view_state(view, text, [], 0) is not none }};{% endfor %}{% endif %}")
    compiled = run_dbt(["compile", "--inline", inline], schema=scenario.schema,
                       target_path=scenario.target_path,
                       vars={"landing_root": str(scenario.landing),
                             "view_texts": {name: text for name, (text, _) in texts.items()}}
                       ).result.results[0].node.compiled_code
    keyed = dict(item.split("=") for item in compiled.strip().rstrip(";").split(";"))
    assert keyed == {name: str(expected) for name, (_, expected) in texts.items()}


def _build_dim_date(scenario, end: str | None) -> None:
    """`dbt run` of dim_date, its last day the var `date_spine_end` (none: the default)."""
    run_dbt(["run", "--select", "dim_date"], schema=scenario.schema,
            target_path=scenario.target_path,
            vars={"landing_root": str(scenario.landing),
                  **({"date_spine_end": end} if end else {})})


def _created_time(spark, view: str) -> str:
    """When the metastore created `view` (to the second): a view dropped and
    created again has a later one."""
    return next(row[1] for row in spark.sql(f"describe table extended {view}").collect()
                if row[0] == "Created Time")


def test_an_edited_view_model_is_what_the_next_run_reads(warehouse_run, spark):
    """A view model built again with other SQL answers with that SQL (Iceberg's
    `create or replace view` on a Hive metastore left Spark reading the first
    SQL: macros/adapters/materialization_view.sql); SQL that does not compile
    fails the run and leaves the view as it was; the same SQL leaves the view
    alone (not dropped and created again)."""
    scenario, _ = warehouse_run
    view = f"{scenario.schema}_dimensions.dim_date"

    def last_day() -> str:
        return str(spark.sql(f"select max(date_day) from {view}").first()[0])

    def created() -> str:
        return _created_time(spark, view)

    assert last_day() == "2030-12-31"
    first = created()
    time.sleep(1.1)  # the metastore's creation time is in seconds
    _build_dim_date(scenario, None)  # the same SQL: the view is kept, never missing
    assert created() == first
    try:
        _build_dim_date(scenario, "2031-06-30")
        assert last_day() == "2031-06-30"
        assert created() != first
        # the spine's end becomes `to_date('2031-01-31') + no_such_column + to_date('2031-01-31')`
        with pytest.raises(DbtError, match="(?i)no_such_column"):
            _build_dim_date(scenario, "2031-01-31') + no_such_column + to_date('2031-01-31")
        assert last_day() == "2031-06-30"
    finally:
        _build_dim_date(scenario, None)
    assert last_day() == "2030-12-31"


def test_a_view_built_again_unchanged_is_kept(warehouse_run, project_copy, tmp_path, spark):
    """A view model built again with the same SQL (comments around it, which
    Spark leaves out of the view's text, aside) is kept: reported "view
    kept", its metastore entry not created again; `--full-refresh` creates
    it again."""
    scenario, _ = warehouse_run
    project = project_copy()
    (project / "models" / "probe").mkdir()
    (project / "models" / "probe" / "probe_kept.sql").write_text(
        "-- a comment before the SQL\n/* and a block */\n"
        "{{ config(materialized='view') }}\n"
        "select order_id, -- a comment inside\n  status\n"
        "from {{ ref('slv_retail__orders') }}\n-- and one after\n")
    view = f"{scenario.schema}.probe_kept"
    settings = {"project_dir": project, "schema": scenario.schema,
                "vars": {"landing_root": str(scenario.landing)}, "target_path": tmp_path / "target"}

    def build(*flags: str) -> tuple[str, str]:
        """The run's message for the view and the view's creation time."""
        result = run_dbt(["run", "--select", "probe_kept", *flags], **settings)
        created = _created_time(spark, view)
        [view_result] = [r for r in result.result.results if r.node.name == "probe_kept"]
        return view_result.adapter_response.get("_message"), created

    try:
        message, first = build()
        assert message != "view kept"
        time.sleep(1.1)  # the metastore's creation time is in seconds
        assert build() == ("view kept", first)
        message, created = build("--full-refresh")
        assert message != "view kept" and created != first
        assert spark.sql(f"select count(*) from {view}").first()[0] == spark.sql(
            f"select count(*) from {scenario.schema}_silver.slv_retail__orders").first()[0]
    finally:
        spark.sql(f"drop view if exists {view}")


def test_a_data_test_with_meta_reuse_pass_false_always_runs(warehouse_run, project_copy,
                                                            tmp_path, spark):
    """`meta: {reuse_pass: false}` (for a test that reads a table by name,
    which the key cannot see) runs the test every time; its twin without it
    reuses its pass on the unchanged table. On a view model, the meta runs
    the tests of every view that reads it too, through another view here;
    the twin chain of views without it reuses its pass."""
    scenario, _ = warehouse_run
    project = project_copy()
    query = "select order_id from {{ ref('slv_retail__orders') }} where order_id is null\n"
    (project / "tests" / "dbt" / "orders_probe_reused.sql").write_text(query)
    (project / "tests" / "dbt" / "orders_probe_always_run.sql").write_text(
        "{{ config(meta={'reuse_pass': false}) }}\n" + query)
    # views in the target schema: outer -> inner -> the silver table
    views = {"probe_inner_refused": ("slv_retail__orders", {"reuse_pass": False}),
             "probe_outer_refused": ("probe_inner_refused", {}),
             "probe_inner": ("slv_retail__orders", {}),
             "probe_outer": ("probe_inner", {})}
    (project / "models" / "probe").mkdir()
    for name, (reads, meta) in views.items():
        (project / "models" / "probe" / f"{name}.sql").write_text(
            f"{{{{ config(materialized='view', meta={meta!r}) }}}}\n"
            f"select order_id from {{{{ ref('{reads}') }}}}\n")
    for outer in ("probe_outer_refused", "probe_outer"):
        (project / "tests" / "dbt" / f"orders_{outer}.sql").write_text(
            f"select order_id from {{{{ ref('{outer}') }}}} where order_id is null\n")
    tests = ["orders_probe_reused", "orders_probe_always_run", "orders_probe_outer_refused",
             "orders_probe_outer"]
    settings = {"project_dir": project, "schema": scenario.schema,
                "vars": {"landing_root": str(scenario.landing)}, "target_path": tmp_path / "target"}
    reused = []
    try:
        run_dbt(["run", "--select", *views], **settings)
        for run in range(2):
            logs = tmp_path / f"run{run}"
            result = run_dbt(["test", "--select", *tests, "--log-path", str(logs)], **settings)
            assert sorted(str(r.status) for r in result.result.results
                          if r.node.resource_type == "test") == ["pass"] * len(tests)
            reused.append(set(re.findall(r"(\w+): pass reused", (logs / "dbt.log").read_text())))
    finally:
        for name in views:
            spark.sql(f"drop view if exists {scenario.schema}.{name}")
    assert reused == [set(), {"orders_probe_reused", "orders_probe_outer"}]
