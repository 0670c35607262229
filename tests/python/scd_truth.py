"""SCD2 ground truth computed in Python from the simulator's version log,
independently of the dbt models (the semantics the README promises)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from cdc_helpers import CLEANING
from lakehouse_cdc.simulator import TABLES, read_versions

OPEN_END = "9999-12-31 00:00:00.000000"
#: full-load versions reach back to the start of time
FULL_LOAD_START = "1900-01-01 00:00:00.000000"

#: dimension -> (entity key, [(table, attribute columns)], tracked columns)
DIMENSIONS = {
    "dim_customer": ("customer_id",
                     [("customer_master", ["first_name", "last_name", "employer_name", "email_id"]),
                      ("customer_address", ["city", "country"])],
                     ["first_name", "last_name", "employer_name", "email_id", "city", "country"]),
    "dim_product": ("product_id", [("product", ["product_name", "category", "unit_price"])],
                    ["product_name", "category", "unit_price"]),
}


def _order(v: dict) -> tuple:
    phase = 0 if v["batch"] == "0" else 1
    return (phase, v["dms_commit_ts"], int(v["AR_H_CHANGE_SEQ"] or 0))


def _clean(table: str, v: dict, columns: list[str]) -> dict:
    cleaners = CLEANING[table]
    return {c: cleaners.get(c, lambda x: x)(v.get(c)) for c in columns}


def _delivered(sim: Path, table: str, batch: int) -> list[dict]:
    return [v for v in read_versions(sim, table) if int(v["batch"]) <= batch]


def full_history(sim: Path, dim: str, batch: int) -> dict[tuple, dict]:
    """Every version per key: {(key, rec_eff_dt): row} as of `batch`."""
    key, sources, tracked = DIMENSIONS[dim]
    events = defaultdict(list)
    for index, (table, columns) in enumerate(sources):
        for v in _delivered(sim, table, batch):
            phase, ts, seq = _order(v)
            ts = FULL_LOAD_START if phase == 0 else ts
            events[v[key]].append((phase, ts, seq, index, v["op"], _clean(table, v, columns)))
    out = {}
    for key_value, evs in events.items():
        evs.sort(key=lambda e: (e[0], e[1], e[2], e[3]))
        state: list[tuple | None] = [None] * len(sources)
        states = []
        for i, (_phase, ts, _seq, src, op, attrs) in enumerate(evs):
            state[src] = (op, attrs)
            if i + 1 < len(evs) and evs[i + 1][1] == ts:
                continue  # only the last state of an instant was ever visible
            exists = state[0] is not None and state[0][0] != "D"
            row = {}
            for index, (_table, columns) in enumerate(sources):
                # a deleted entity's version holds no attribute (README)
                live = exists and state[index] is not None and state[index][0] != "D"
                row.update({c: state[index][1][c] if live else None for c in columns})
            states.append((ts, exists, tuple(row[c] for c in tracked), row))
        versions = []
        for ts, exists, hashed, row in states:
            if versions and (versions[-1][1], versions[-1][2]) == (exists, hashed):
                continue
            if not versions and not exists:
                continue  # before the key first existed
            versions.append((ts, exists, hashed, row))
        for i, (ts, exists, _hashed, row) in enumerate(versions):
            last = i + 1 == len(versions)
            out[(key_value, ts)] = {
                **{c: row[c] for c in tracked},
                "rec_exp_dt": OPEN_END if last else versions[i + 1][0],
                "is_current": last and exists,
                "is_deleted": not exists,
            }
    return out


class SnapshotModel:
    """What a hash-diff snapshot run after each batch must hold."""

    def __init__(self, dim: str):
        self.key, self.sources, self.tracked = DIMENSIONS[dim]
        self.versions: dict[str, list[dict]] = defaultdict(list)

    def run(self, sim: Path, batch: int) -> None:
        latest = []
        for table, _columns in self.sources:
            per_key = {}
            for v in _delivered(sim, table, batch):
                if v[self.key] not in per_key or _order(v) > _order(per_key[v[self.key]]):
                    per_key[v[self.key]] = v
            latest.append(per_key)
        for key_value, master in latest[0].items():
            deleted = master["op"] == "D"
            row = dict(_clean(self.sources[0][0], master, self.sources[0][1]))
            changed_at = master["dms_commit_ts"]
            for (table, columns), per_key in zip(self.sources[1:], latest[1:], strict=True):
                other = per_key.get(key_value)
                live = other is not None and other["op"] != "D"
                row.update({c: _clean(table, other, columns)[c] if live else None
                            for c in columns})
                if other is not None and not deleted:  # a deleted version starts at the delete
                    changed_at = max(changed_at, other["dms_commit_ts"])
            state = {"is_deleted": deleted,
                     **{c: (None if deleted else row[c]) for c in self.tracked}}
            history = self.versions[key_value]
            if history and (history[-1]["state"] == state
                             or changed_at <= history[-1]["rec_eff_dt"]):
                continue
            if history:
                history[-1]["rec_exp_dt"] = changed_at
            history.append({"rec_eff_dt": changed_at, "rec_exp_dt": OPEN_END, "state": state})

    def expected(self) -> dict[tuple, dict]:
        return {(k, v["rec_eff_dt"]): {**v["state"], "rec_exp_dt": v["rec_exp_dt"]}
                for k, history in self.versions.items() for v in history}


def assert_tables_exist(dims=DIMENSIONS) -> None:
    for _dim, (_key, sources, _tracked) in dims.items():
        for table, _columns in sources:
            assert table in TABLES
