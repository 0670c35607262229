"""Seeds (`dbt seed`, and `dbt build`'s seed step) on Iceberg: the table holds
the CSV's rows; a build with the CSV unchanged writes nothing to it; a changed
CSV replaces its rows in the same table (one commit, its history kept); a
changed column type or a full refresh makes the table again; and no load
leaves files of an earlier table behind in the table's folder (dbt-spark's
own seed drops the table and creates it again on every load, and Iceberg's
DROP TABLE without PURGE keeps the files)."""

from __future__ import annotations

import csv
from pathlib import Path
from urllib.parse import urlparse

from lakehouse_cdc.dbt_runner import run_dbt


def _csv_truth(path: Path) -> set[tuple]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {(r["status"], r["status_description"], r["is_cancelled"] == "true")
                for r in csv.DictReader(handle)}


def _state(spark, table: str) -> dict:
    """What the table holds, its snapshots, and whether every data file in
    its folder is one of its own (in any snapshot)."""
    rows = {(r.status, r.status_description, r.is_cancelled)
            for r in spark.sql(f"select * from {table}").collect()}
    location = [r.data_type for r in spark.sql(f"describe table extended {table}").collect()
                if r.col_name == "Location"][0]
    folder = Path(urlparse(location).path)
    on_disk = {str(p) for p in (folder / "data").rglob("*.parquet")}
    known = {urlparse(r.file_path).path for r in spark.sql(
        f"select file_path from {table}.all_data_files").collect()}
    return {"rows": rows,
            "snapshots": [r.snapshot_id for r in spark.sql(
                f"select snapshot_id from {table}.snapshots order by committed_at").collect()],
            "types": {r.col_name: r.data_type for r in spark.sql(f"describe {table}").collect()},
            # one more per commit, of data or of properties alone
            "metadata_files": len(list((folder / "metadata").glob("*.metadata.json"))),
            "stray_files": on_disk - known}


def test_seed_loads_only_when_its_csv_changed_and_leaves_no_stray_file(
        spark, schema, project_copy, tmp_path):
    project = project_copy()
    seed_csv = project / "seeds" / "order_status.csv"
    table = f"{schema}_seeds.order_status"

    def seed(*extra: str) -> dict:
        run_dbt(["seed", "--select", "order_status", *extra], project_dir=project, schema=schema,
                target_path=tmp_path / "target")
        return _state(spark, table)

    first = seed()
    assert first["rows"] == _csv_truth(seed_csv)
    assert len(first["snapshots"]) == 1 and first["stray_files"] == set()

    # the same CSV: no commit, no new file
    again = seed()
    assert again == first

    # a changed CSV: its rows, in the same table (one more snapshot)
    text = seed_csv.read_text()
    seed_csv.write_text(text.replace("Handed to the carrier", "Handed to the carrier; in transit")
                        + "RETURNED,Sent back by the customer,true\n")
    changed = seed()
    assert changed["rows"] == _csv_truth(seed_csv) != first["rows"]
    assert changed["snapshots"][:1] == first["snapshots"] and len(changed["snapshots"]) == 2
    assert changed["stray_files"] == set()

    # a changed column type: a new table, none of the old one's files left
    yml = project / "seeds" / "_seeds.yml"
    yml.write_text(yml.read_text().replace("is_cancelled: boolean", "is_cancelled: string"))
    retyped = seed()
    assert retyped["types"]["is_cancelled"] == "string"
    assert retyped["rows"] == {(status, description, str(cancelled).lower())
                               for status, description, cancelled in _csv_truth(seed_csv)}
    assert len(retyped["snapshots"]) == 1 and retyped["stray_files"] == set()

    # a full refresh: made again, with no stray file either
    refreshed = seed("--full-refresh")
    assert refreshed["rows"] == retyped["rows"]
    assert refreshed["snapshots"] != retyped["snapshots"] and refreshed["stray_files"] == set()
