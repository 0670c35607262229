"""pre-commit: every hook is local (the pinned tools of the virtualenv, no
clone, no download), the repository passes `pre-commit run --all-files`, and
the dbt-bouncer rules catch a model that breaks them.

The sqlfluff hook with the dbt templater is skipped here: test_lint.py runs
the same lint in this process (same .sqlfluff), in the suite's Spark session.
The macros' lint (sqlfluff-macros) runs only here."""

from __future__ import annotations

import json
import os
import subprocess

import yaml
from lakehouse_cdc import PROJECT_ROOT

IN_VENV = PROJECT_ROOT / "scripts" / "in-venv"


def _config():
    return yaml.safe_load((PROJECT_ROOT / ".pre-commit-config.yaml").read_text())


def test_hooks_are_local_and_use_the_pinned_tools():
    (repo,) = _config()["repos"]
    assert repo["repo"] == "local"
    requirements = (PROJECT_ROOT / "requirements.txt").read_text()
    for package in ("pre-commit==", "pre-commit-hooks==", "sqlfluff==",
                    "sqlfluff-templater-dbt==", "dbt-bouncer==", "ruff"):
        assert f"\n{package}" in requirements, package
    ids = {hook["id"] for hook in repo["hooks"]}
    assert {"check-yaml", "ruff", "sqlfluff-dbt", "sqlfluff-macros", "dbt-parse",
            "dbt-bouncer"} <= ids
    for hook in repo["hooks"]:
        assert hook["entry"].startswith("scripts/in-venv "), hook["id"]


def test_repository_passes_precommit_and_bouncer_can_fail(tmp_path):
    env = {**os.environ, "SKIP": "sqlfluff-dbt", "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([str(IN_VENV), "pre-commit", "run", "--all-files"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    ran = [line for line in proc.stdout.splitlines() if line.endswith("Passed")]
    assert len(ran) >= 8, proc.stdout  # every hook but the skipped one ran and passed

    # the manifest the dbt-parse hook wrote, with a convention broken twice
    manifest = json.loads((PROJECT_ROOT / "target/pre-commit/manifest.json").read_text())
    node = manifest["nodes"]["model.lakehouse_cdc.mart_customer_lifetime_value"]
    node["name"] = "dim_lifetime_value"
    node["columns"]["order_count"]["description"] = ""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text(json.dumps(manifest))
    config = yaml.safe_load((PROJECT_ROOT / "dbt-bouncer.yml").read_text())
    config["dbt_artifacts_dir"] = str(broken)
    (tmp_path / "bouncer.yml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([str(IN_VENV), "dbt-bouncer", "run", "--config-file",
                           str(tmp_path / "bouncer.yml")],
                          cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert proc.returncode != 0, proc.stdout
    failed = {line.split(":")[0].strip("│ ") for line in proc.stdout.splitlines()
              if "ERROR" in line and line.startswith("│")}
    assert failed == {"check_model_names", "check_model_column_description_populated"}, \
        proc.stdout[-4000:]
