"""Lint gates: ruff over the Python helpers, sqlfluff over models and snapshots."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib

from lakehouse_cdc import PROJECT_ROOT


def test_ruff_clean():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "python_helpers", "tests/python"],
        cwd=PROJECT_ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sqlfluff_clean(spark, monkeypatch):
    """Models, snapshots and dbt tests as the dbt templater compiles them (the
    .sqlfluff settings pre-commit uses, cdc_changes() giving its columns
    without the parse it generates), linted in this process: dbt-spark's
    session method reuses the test suite's Spark session, so no second JVM
    and no second metastore. The macros (jinja templater) are linted once,
    by pre-commit's sqlfluff-macros hook in test_precommit.py."""
    from sqlfluff.core import FluffConfig, Linter

    monkeypatch.chdir(PROJECT_ROOT)
    config = FluffConfig.from_path(str(PROJECT_ROOT))
    assert config.get("templater") == "dbt"
    result = Linter(config=config).lint_paths(("models", "snapshots", "tests/dbt"))
    assert result.stats(fail_code=1, success_code=0)["files"] >= 15
    problems = [f"{record['filepath']}: {v['code']} line {v['start_line_no']}: "
                f"{v['description']}" for record in result.as_records()
                for v in record["violations"]]
    assert not problems, problems

    # a silver model's own SQL is still linted as dbt compiles it (cdc_changes
    # gives the linter its columns, not the parse: .sqlfluff's dbt vars)
    model = PROJECT_ROOT / "models/silver/retail/slv_retail__orders.sql"
    text = model.read_text()
    assert "select * from cleaned" in text
    # ... with the columns cdc_changes gives, not its parse (no casts)
    [rendered] = Linter(config=config).render_string(
        text, str(model), config, "utf-8").templated_variants
    assert "_cdc_reject_reason" in rendered.templated_str
    assert "try_cast" not in rendered.templated_str, rendered.templated_str[:2000]
    result = Linter(config=config).lint_string(
        text.replace("select * from cleaned", "SELECT * from cleaned"), fname=str(model))
    assert {v.rule_code() for v in result.get_violations()} == {"CP01"}, result.get_violations()


def test_sqlfluff_config_flags_bad_style(tmp_path):
    """The lint gate can fail: upper-case keywords and a missing alias are flagged."""
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT a, b + 1 FROM {{ ref('x') }}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sqlfluff", "lint", str(bad), "--config",
         str(PROJECT_ROOT / ".sqlfluff"), "--templater", "jinja", "--disable-progress-bar"],
        cwd=PROJECT_ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 1, proc.stdout
    assert "CP01" in proc.stdout


def _imports(path) -> set[str]:
    """Modules a file imports, at any depth (function-level imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_python_package_has_no_import_cycle():
    package = PROJECT_ROOT / "python_helpers" / "lakehouse_cdc"
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph = {name: {m for m in _imports(path) if m in modules and m != name
                    and not name.startswith(m + ".")}  # a package's own __init__
             for name, path in modules.items()}

    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    return trail + [start]
                if nxt not in trail:
                    stack.append((nxt, trail + [nxt]))
        return None

    cycles = [c for c in map(cycle_from, sorted(graph)) if c]
    assert not cycles, cycles


def test_pyproject_lists_every_package_the_code_imports():
    from importlib.metadata import packages_distributions

    pyproject = tomllib.loads((PROJECT_ROOT / "python_helpers" / "pyproject.toml").read_text())
    optional = [dep for group in pyproject["project"].get("optional-dependencies", {}).values()
                for dep in group]
    declared = {re.split(r"[\[=<>~! ]", dep)[0].lower().replace("_", "-")
                for dep in pyproject["project"]["dependencies"] + optional}
    distributions = packages_distributions()
    imported = {name.split(".")[0] for path in
                (PROJECT_ROOT / "python_helpers" / "lakehouse_cdc").rglob("*.py")
                for name in _imports(path)}
    third_party = imported - set(sys.stdlib_module_names) - {"lakehouse_cdc"}
    missing = {top: distributions.get(top, [top]) for top in third_party
               if not {d.lower().replace("_", "-") for d in distributions.get(top, [top])}
               & declared}
    assert third_party and not missing, missing


#: a macro's or a generic test's definition in a macro file
_DEFINED = re.compile(r"\{%-?\s*(macro|test)\s+(\w+)\s*\(")


def _undocumented_public_macros(macros_dir) -> tuple[list[str], int]:
    """The public macros (names not starting with `_`; a generic test `x` is
    the macro `test_x`) without a description in their folder's
    `_<folder>__macros.yml`, and how many public macros there are."""
    import yaml

    missing, public = [], 0
    for folder in sorted(p for p in macros_dir.iterdir() if p.is_dir()):
        described = {}
        for properties in folder.glob(f"_{folder.name}__macros.yml"):
            for entry in yaml.safe_load(properties.read_text()).get("macros", []):
                described[entry["name"]] = (entry.get("description") or "").strip()
        for sql in sorted(folder.glob("*.sql")):
            for kind, name in _DEFINED.findall(sql.read_text()):
                name = f"test_{name}" if kind == "test" else name
                if name.startswith("_"):
                    continue
                public += 1
                if len(described.get(name, "")) < 4:
                    missing.append(f"{folder.name}/{sql.name}: {name}")
    return missing, public


def test_every_public_macro_is_documented_beside_it(tmp_path):
    """House style: a public macro has an entry with a description in the
    `_<folder>__macros.yml` beside it (what `dbt docs` shows); dbt-bouncer
    then checks that an entry documents every argument. A folder whose
    macro has no entry is caught."""
    missing, public = _undocumented_public_macros(PROJECT_ROOT / "macros")
    assert public > 40 and not missing, missing
    folder = tmp_path / "macros" / "extra"
    folder.mkdir(parents=True)
    (folder / "_extra__macros.yml").write_text(
        "version: 2\nmacros:\n  - name: documented\n    description: it is documented\n")
    (folder / "two.sql").write_text(
        "{% macro documented() %}{% endmacro %}\n{%- macro _private() %}{% endmacro %}\n"
        "{% test not_documented(model) %}{% endtest %}\n")
    assert _undocumented_public_macros(tmp_path / "macros") == (
        ["extra/two.sql: test_not_documented"], 2)
