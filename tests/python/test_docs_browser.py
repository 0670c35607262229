"""The lineage docs a person opens: `dbt docs generate` on the built warehouse,
`dbt docs serve` on localhost, and Debian's Chromium (headless, driven by
Playwright) looking at them.

The rendered lineage graph must hold exactly the edges of the project's
manifest and run bronze -> silver -> dimensions -> gold; a model page per
layer must list the columns of the real table with their Spark types and the
descriptions written in the YAML. Screenshots are saved under
``$LAKEHOUSE_TEST_ARTIFACTS`` (default ``test-artifacts/docs/``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from cdc_helpers import free_port
from lakehouse_cdc import PROJECT_ROOT
from lakehouse_cdc.dbt_runner import run_dbt

CHROMIUM = os.environ.get("LAKEHOUSE_CHROMIUM", "/usr/bin/chromium")
#: what a root process in a closed network needs: no sandbox, no GPU, and
#: none of Chromium's own background connections
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]
PROJECT = yaml.safe_load((PROJECT_ROOT / "dbt_project.yml").read_text())["name"]
#: node types the lineage graph draws by default
GRAPH_TYPES = ("source", "model", "snapshot", "seed", "exposure")
ARTIFACTS = Path(os.environ.get("LAKEHOUSE_TEST_ARTIFACTS",
                               PROJECT_ROOT / "test-artifacts")) / "docs"

#: one page per layer: (docs route, relation suffix after the schema prefix)
PAGES = [
    (f"source/source.{PROJECT}.dms_retail.orders", "bronze.orders"),
    (f"model/model.{PROJECT}.slv_retail__customer_master", "silver.slv_retail__customer_master"),
    (f"snapshot/snapshot.{PROJECT}.snp_customer", "snapshots.snp_customer"),
    (f"model/model.{PROJECT}.dim_customer", "dimensions.dim_customer"),
    (f"model/model.{PROJECT}.fct_orders", "gold.fct_orders"),
]


class PortTaken(AssertionError):
    """The server could not bind its port: another process took it first."""


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = proc.stdout.read() if proc.stdout else ""
            if "Address already in use" in output:
                raise PortTaken(output)
            raise AssertionError(f"dbt docs serve exited with {proc.returncode}:\n{output}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"dbt docs serve did not answer on {url} within {timeout}s")


def _serve(target: Path, schema: str) -> tuple[subprocess.Popen, str]:
    """`dbt docs serve` on a free loopback port; a new port if another process
    binds the chosen one first (the background work starts servers too)."""
    dbt = shutil.which("dbt", path=str(Path(sys.executable).parent)) or "dbt"
    env = {**os.environ, "LAKEHOUSE_SCHEMA": schema, "DO_NOT_TRACK": "1",
           "DBT_LOG_PATH": str(target.parent / "logs")}
    attempts = 3
    for attempt in range(1, attempts + 1):
        port = free_port()
        proc = subprocess.Popen(
            [dbt, "docs", "serve", "--port", str(port), "--host", "127.0.0.1", "--no-browser",
             "--project-dir", str(PROJECT_ROOT), "--target-path", str(target),
             "--profiles-dir", os.environ.get("DBT_PROFILES_DIR",
                                              str(PROJECT_ROOT / "profiles"))],
            cwd=target.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_http(f"{url}/index.html", proc)
            return proc, url
        except PortTaken:
            if attempt == attempts:
                raise
        except BaseException:
            proc.terminate()
            proc.wait(timeout=30)
            raise
    raise AssertionError("not reached: the last attempt returns or raises")


@pytest.fixture(scope="module")
def docs_site(warehouse_run, tmp_path_factory):
    """Generate the docs for the built warehouse and serve them with dbt."""
    scenario, _ = warehouse_run
    target = tmp_path_factory.mktemp("docs") / "target"
    run_dbt(["docs", "generate"], schema=scenario.schema,
            vars={"landing_root": str(scenario.landing), **scenario.vars}, target_path=target)
    proc, url = _serve(target, scenario.schema)
    try:
        yield url, target, scenario.schema
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # Playwright starts Chromium with a new, empty --user-data-dir of its own
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


def _open(browser, url: str, height: int = 1000):
    page = browser.new_page(viewport={"width": 1600, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    return page, errors


def _layer(unique_id: str) -> str:
    """The layer a node belongs to, read from the naming scheme."""
    kind, name = unique_id.split(".")[0], unique_id.split(".")[-1]
    if kind == "source":
        return "bronze"
    if kind in ("exposure", "seed"):
        return kind
    for prefix, layer in (("slv_", "silver"), ("int_", "silver"), ("snp_", "snapshots"),
                          ("dim_", "dimensions"),
                          ("fct_", "gold"), ("mart_", "gold")):
        if name.startswith(prefix):
            return layer
    raise AssertionError(f"{unique_id} does not follow the naming scheme")


def _ancestors(edges: set[tuple[str, str]], node: str) -> set[str]:
    parents: dict[str, set[str]] = {}
    for parent, child in edges:
        parents.setdefault(child, set()).add(parent)
    seen: set[str] = set()
    todo = [node]
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def test_lineage_graph_renders_bronze_to_gold(docs_site, browser):
    url, target, _ = docs_site
    page, errors = _open(browser, f"{url}/#!/overview?g_v=1")
    page.wait_for_function("window.graph && window.graph.nodes().length > 0", timeout=60_000)
    # wait for the layout to settle: node positions stop moving
    page.wait_for_function(
        """() => { const p = JSON.stringify(window.graph.nodes().map(n => n.renderedPosition()));
                   const same = window._lastPositions === p; window._lastPositions = p;
                   return same; }""", polling=500, timeout=30_000)
    graph = page.evaluate(
        """() => {
          const cy = window.graph, w = cy.width(), h = cy.height();
          const nodes = cy.nodes().map(n => {
            const b = n.renderedBoundingBox();
            return {id: n.id(), visible: n.visible(), label: n.data('label') || n.data('name'),
                    inside: b.x1 >= 0 && b.y1 >= 0 && b.x2 <= w && b.y2 <= h && b.w > 5};
          });
          const edges = cy.edges().map(e => [e.source().id(), e.target().id()]);
          let painted = 0;
          for (const c of document.querySelectorAll('#cy canvas')) {
            const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            for (let i = 3; i < px.length; i += 4) if (px[i] > 0) painted++;
          }
          return {nodes, edges, painted, area: w * h};
        }""")
    page.screenshot(path=str(ARTIFACTS / "lineage.png"))
    print(f"lineage screenshot: {ARTIFACTS / 'lineage.png'}")
    page.close()
    assert errors == [], f"the docs page threw: {errors}"

    manifest = json.loads((target / "manifest.json").read_text())
    expected_nodes = {uid for uid in manifest["parent_map"]
                      if uid.split(".")[0] in GRAPH_TYPES}
    expected_edges = {(parent, child) for child, parents in manifest["parent_map"].items()
                      if child in expected_nodes
                      for parent in parents if parent in expected_nodes}
    # the page also draws unit tests and singular tests of several models
    drawn = {node["id"]: node for node in graph["nodes"]
             if node["id"].split(".")[0] in GRAPH_TYPES}
    assert set(drawn) == expected_nodes
    assert {tuple(edge) for edge in graph["edges"]
            if edge[0] in drawn and edge[1] in drawn} == expected_edges
    hidden = [uid for uid, node in drawn.items() if not (node["visible"] and node["inside"])]
    assert hidden == [], f"nodes drawn off screen or hidden: {hidden}"
    # the canvas really has ink on it (nodes and edges), not just a data model
    assert graph["painted"] > 0.005 * graph["area"], graph["painted"]

    # the lineage runs bronze -> silver -> dimensions -> gold
    layers = {uid: _layer(uid) for uid in drawn}
    assert {"bronze", "silver", "snapshots", "dimensions", "gold"} <= set(layers.values())
    edges = {tuple(edge) for edge in graph["edges"]}
    for fact in (uid for uid in drawn if uid.split(".")[-1].startswith("fct_")):
        chains = [dim for dim in _ancestors(edges, fact) if layers[dim] == "dimensions"
                  and any(layers[s] == "silver"
                          and any(layers[b] == "bronze" for b in _ancestors(edges, s))
                          for s in _ancestors(edges, dim))]
        assert chains, f"{fact} has no bronze -> silver -> dimension lineage"
    for source in (uid for uid, layer in layers.items() if layer == "bronze"):
        assert any(layers[uid] == "gold" and source in _ancestors(edges, uid) for uid in drawn), \
            f"{source} reaches no gold model"


def _docs_blocks() -> dict[str, str]:
    """`{% docs name %}...{% enddocs %}` blocks of the project, by name."""
    blocks = {}
    for path in PROJECT_ROOT.glob("models/**/*.md"):
        for name, body in re.findall(r"{%\s*docs\s+(\w+)\s*%}(.*?){%\s*enddocs\s*%}",
                                     path.read_text(), flags=re.S):
            blocks[name] = body.strip()
    return blocks


def _yaml_descriptions(unique_id: str) -> tuple[str, dict[str, str]]:
    """The node's and its columns' descriptions as written in the YAML files
    (a `{{ doc("name") }}` reference replaced by its docs block)."""
    blocks = _docs_blocks()

    def resolve(text: str) -> str:
        return re.sub(r"{{\s*doc\(\s*['\"](\w+)['\"]\s*\)\s*}}",
                      lambda match: blocks[match.group(1)], text)

    kind, name = unique_id.split(".")[0], unique_id.split(".")[-1]
    for path in [*PROJECT_ROOT.glob("models/**/*.yml"), *PROJECT_ROOT.glob("snapshots/*.yml")]:
        doc = yaml.safe_load(path.read_text()) or {}
        if kind == "source":
            entries = [table for src in doc.get("sources", [])
                       if src["name"] == unique_id.split(".")[2] for table in src["tables"]]
        else:
            entries = doc.get(f"{kind}s", [])
        for entry in entries:
            if entry["name"] == name:
                return resolve(entry.get("description", "")), {
                    col["name"]: resolve(col.get("description", ""))
                    for col in entry.get("columns", [])}
    raise AssertionError(f"no YAML entry for {unique_id}")


def _canon_type(name: str) -> str:
    # Spark prints one type under two names (typeName vs simpleString); the docs
    # site shows a nested type (map, array, struct) by its outer name only
    name = name.strip().lower().split("<", 1)[0]
    aliases = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
    return aliases.get(name, name)


def _squash(text: str) -> str:
    """Whitespace folded and code marks dropped: the page renders Markdown."""
    return " ".join(text.replace("`", "").split())


@pytest.mark.parametrize("route,relation", PAGES, ids=[p[1] for p in PAGES])
def test_node_page_lists_columns_with_types_and_descriptions(docs_site, browser, spark,
                                                             route, relation):
    url, _, schema = docs_site
    page, errors = _open(browser, f"{url}/#!/{route}", height=1500)
    page.wait_for_selector("column-details tr.column-row", timeout=60_000)
    rows = page.evaluate(
        """() => [...document.querySelectorAll('column-details tr.column-row')].map(tr =>
             [...tr.querySelectorAll(':scope > td')].slice(0, 3).map(td => td.innerText.trim()))""")
    title = page.inner_text("h1").strip()
    description = page.inner_text("#description + .section-content")
    shot = ARTIFACTS / f"{relation.replace('.', '__')}.png"
    page.screenshot(path=str(shot))
    page.close()
    assert errors == [], f"the docs page threw: {errors}"

    unique_id = route.split("/", 1)[1]
    assert unique_id.split(".")[-1] in title
    table = spark.table(f"{schema}_{relation}")
    truth = {f.name: _canon_type(f.dataType.simpleString()) for f in table.schema.fields}
    shown = {name: _canon_type(dtype) for name, dtype, _ in rows}
    assert shown == truth, "the page's columns and types differ from the table's"

    node_doc, column_docs = _yaml_descriptions(unique_id)
    assert _squash(node_doc)[:60] in _squash(description)
    for name, _, text in rows:
        assert name in column_docs, f"{name} is not documented in YAML"
        assert _squash(text) == _squash(column_docs[name]), name
