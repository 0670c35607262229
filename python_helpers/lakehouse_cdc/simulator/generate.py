"""The simulated retail database and its change stream.

Full-load rows are a pure function of (seed, table, key) (`BaseData`), so the
full load of any size is streamed without being held in memory; the
simulator's database is that function plus an overlay of every key changed
by CDC. All choices come from one `random.Random(seed)`; nothing depends on
the wall clock.

Sizes for `scale` S: customer_master S, customer_address S (one per
customer), product S, orders 2*S, order_items 1-5 lines per order (~6*S):
about 11*S rows in the full load.

Timeline (simulated, UTC): the full load from 2025-01-01 00:00:00, each
table's rows stamped (dms_commit_ts) 7 s after the table before (DMS stamps a
full-load row when it copies it), then batch k covers the hour from 00:00 + k
hours. Changes of
a batch are committed in that hour, in transactions (a customer with its
address, an order with its lines share a commit timestamp); the change
counter in AR_H_CHANGE_SEQ / `__lsn` follows commit order across all tables.

Traps, each at its knob's rate, plus one forced instance per batch when the
rate is above zero (so a default run always has every one): two updates of
one key at the same microsecond, an insert and an update of one key at the
same microsecond, a delete and a re-insert of one key at the same microsecond
(tie-rate); a delete followed later in the batch by a re-insert of the key
(always); an update delivered in a later batch's `late` file while the later
delete of that key lands on time (late-rate, needs batches >= 2). The first
CDC file gets a duplicated row and one malformed row of each reason, and is
redelivered (redeliver-rate / malformed-rate above zero).

Layout of `customer_master` files when `add_column_at_batch` N is set: a file
has the trailing loyalty_tier column iff its changes were committed in batch
N or later. Late files holding older changes keep the old layout even when
written after the column was added; redelivered files are byte copies.
"""

from __future__ import annotations

import heapq
import math
import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from lakehouse_cdc.simulator.schema import (
    TABLES,
    Key,
    Row,
    change_seq,
    format_ts,
)
from lakehouse_cdc.simulator.truth import (
    MANIFEST,
    TRUTH_DIR,
    TableTruth,
    write_files,
    write_manifest,
    write_rejects,
)
from lakehouse_cdc.simulator.writers import FORMATS, FileEmitter, FileEntry, Record

HOUR_US = 3_600_000_000
T0_US = 1_735_689_600_000_000  # 2025-01-01 00:00:00 UTC: full load start
LOAD_STAGGER_US = 7_000_000  # each table's full load 7 s after the one before
HISTORY_START_US = 1_704_067_200_000_000  # 2024-01-01: full-load rows date from 2024
HISTORY_SPAN_US = T0_US - HISTORY_START_US - 86_400_000_000
REINSERT_SHARE = 0.25  # share of deletes followed by a re-insert of the key in the batch
_M64 = (1 << 64) - 1

FIRST_NAMES = (
    ("Alice", "alice"), ("Bob", "bob"), ("José", "jose"), ("Zoë", "zoe"),
    ("Anne-Marie", "annemarie"), ("Seán", "sean"), ("Priya", "priya"), ("Wei", "wei"),
    ("Olga", "olga"), ("Kwame", "kwame"), ("Fatima", "fatima"), ("Liam", "liam"),
    ("Mia", "mia"), ("Noah", "noah"), ("Emma", "emma"), ("Yuki", "yuki"),
)
LAST_NAMES = (
    ("Smith", "smith"), ("O'Brien", "obrien"), ("García", "garcia"), ("Müller", "muller"),
    ("Nguyen", "nguyen"), ("Kowalski", "kowalski"), ("Okafor", "okafor"),
    ("Johnson", "johnson"), ("Rossi", "rossi"), ("Dubois", "dubois"), ("Tanaka", "tanaka"),
    ("Patel", "patel"), ("van der Berg", "vanderberg"), ("Smith, Jr.", "smithjr"),
)
EMPLOYERS = (
    "Acme Corp", "Globex", "Initech", "Smith, Jones & Partners", 'The "Best" Bakery',
    "Line One\nLine Two Ltd", "Umbrella Ltd", "Stark Industries", "Müller GmbH",
    'Quote "Heavy", Comma Co', "Wayne Enterprises",
)
STREETS = ("Main St", "High Street", "Elm Rd", "Rue de Rivoli", "Bahnhofstrasse",
           "Calle Mayor", "Baker Street", "Oak Avenue")
CITIES = (
    ("Paris", "France"), ("Zürich", "Switzerland"), ("Washington, D.C.", "USA"),
    ("New York", "USA"), ("London", "UK"), ("Berlin", "Germany"), ("Madrid", "Spain"),
    ("Tokyo", "Japan"), ("Lagos", "Nigeria"), ("São Paulo", "Brazil"), ("Mumbai", "India"),
    ("Sydney", "Australia"),
)
ADJECTIVES = ("Classic", "Deluxe", "Eco", "Compact", "Premium", "Basic", "Smart", "Vintage")
NOUNS = ("Kettle", "Lamp", "Chair", 'Pipe 1/2"', "Nuts, Bolts & Washers", "Backpack",
         "Gift Card\n(printed)", "Headphones", "Notebook", "Blender")
CATEGORIES = ("Kitchen", "Home", "Hardware", "Outdoor", "Electronics", "Stationery", "Gifts")
TIERS = ("BRONZE", "SILVER", "GOLD", "PLATINUM")
_SLUG = dict(FIRST_NAMES + LAST_NAMES)


def mix64(x: int) -> int:
    """splitmix64 finaliser: a well-mixed 64-bit hash of a 64-bit integer."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _employer(pick: int, which: int) -> str | None:
    if pick < 8:
        return None
    if pick < 13:
        return ""
    return EMPLOYERS[which % len(EMPLOYERS)]


def _address_line(number: int, street: str, variant: int, extra: int) -> str:
    if variant < 10:
        return f"Flat {extra}, {number} {street}"
    if variant < 13:
        return f'Apt "{"ABCDEFGH"[extra % 8]}", {number} {street}'
    if variant < 15:
        return f"c/o Reception\n{number} {street}"
    return f"{number} {street}"


class BaseData:
    """Full-load rows as a pure function of (seed, table, key)."""

    def __init__(self, seed: int, scale: int) -> None:
        self.n_customers = scale
        self.n_products = scale
        self.n_orders = 2 * scale
        root = mix64(seed & _M64)
        self._salt = {name: mix64(root ^ (i + 1) * 0x51ED27) for i, name in enumerate(TABLES)}
        self._lines_salt = mix64(root ^ 0xA11CE)

    def _h(self, table: str, key: int) -> int:
        return mix64(self._salt[table] ^ key)

    @staticmethod
    def _when(h: int) -> int:
        return HISTORY_START_US + mix64(h) % HISTORY_SPAN_US

    def customer(self, cid: int) -> Row:
        h = self._h("customer_master", cid)
        h, fi = divmod(h, len(FIRST_NAMES))
        h, li = divmod(h, len(LAST_NAMES))
        h, pick = divmod(h, 100)
        first, first_slug = FIRST_NAMES[fi]
        last, last_slug = LAST_NAMES[li]
        email = f"{first_slug}.{last_slug}{cid}@example.com"
        return (cid, first, last, _employer(pick, h), email, self._when(h), None)

    def address(self, cid: int) -> Row:
        h = self._h("customer_address", cid)
        h, ci = divmod(h, len(CITIES))
        h, si = divmod(h, len(STREETS))
        h, variant = divmod(h, 100)
        h, number = divmod(h, 200)
        city, country = CITIES[ci]
        line = _address_line(number + 1, STREETS[si], variant, h % 40 + 1)
        return (cid, line, city, country, self._when(h))

    def price(self, pid: int) -> int:
        return 99 + self._h("product", pid) % 49_901

    def product(self, pid: int) -> Row:
        h = self._h("product", pid)
        price = 99 + h % 49_901
        h //= 49_901
        h, ai = divmod(h, len(ADJECTIVES))
        h, ni = divmod(h, len(NOUNS))
        name = f"{ADJECTIVES[ai]} {NOUNS[ni]}"
        return (pid, name, CATEGORIES[h % len(CATEGORIES)], price, self._when(h))

    def order(self, oid: int) -> Row:
        h = self._h("orders", oid)
        h, cust = divmod(h, self.n_customers)
        h, st = divmod(h, 100)
        status = "DELIVERED" if st < 70 else "CANCELLED" if st < 80 else (
            "SHIPPED" if st < 90 else "PLACED")
        order_ts = self._when(h)
        audit = order_ts + (h % 86_400_000_000 if status != "PLACED" else 0)
        return (oid, cust + 1, order_ts, status, audit)

    def n_lines(self, oid: int) -> int:
        return 1 + mix64(self._lines_salt ^ oid) % 5

    def item(self, oid: int, line: int) -> Row:
        h = self._h("order_items", (oid << 8) | line)
        h, prod = divmod(h, self.n_products)
        h, qty = divmod(h, 20)
        quantity = 1 + qty % 3 if qty < 15 else qty - 10
        return (oid, line, prod + 1, quantity, self.price(prod + 1), self._when(h))

    def row(self, table: str, key: Key) -> Row | None:
        """Full-load row of `key`, None when the key was not in the full load."""
        first = key[0]
        if first < 1:
            return None
        if table == "customer_master":
            return self.customer(first) if first <= self.n_customers else None
        if table == "customer_address":
            return self.address(first) if first <= self.n_customers else None
        if table == "product":
            return self.product(first) if first <= self.n_products else None
        if table == "orders":
            return self.order(first) if first <= self.n_orders else None
        if first <= self.n_orders and 1 <= key[1] <= self.n_lines(first):
            return self.item(first, key[1])
        return None

    def keys(self, table: str) -> Iterator[Key]:
        """Full-load keys in key order."""
        if table == "order_items":
            for oid in range(1, self.n_orders + 1):
                for line in range(1, self.n_lines(oid) + 1):
                    yield (oid, line)
            return
        upper = {"customer_master": self.n_customers, "customer_address": self.n_customers,
                 "product": self.n_products, "orders": self.n_orders}[table]
        for k in range(1, upper + 1):
            yield (k,)

    def rows(self, table: str) -> Iterator[tuple[Key, Row]]:
        for key in self.keys(table):
            row = self.row(table, key)
            assert row is not None
            yield key, row


@dataclass(slots=True)
class Change:
    """One committed row change. `row` is the after-image (I/U) or the
    before-image (D); `delivery` is the batch whose files first carry it."""

    table: str
    op: str
    key: Key
    row: Row
    commit_us: int
    counter: int
    origin: int
    delivery: int

    @property
    def seq(self) -> str:
        return change_seq(self.commit_us, self.counter)


class Simulator:
    """The operational database: full-load rows plus an overlay of changes."""

    def __init__(self, seed: int, scale: int, batches: int, changes_per_batch: int,
                 mix: tuple[int, int, int], multi_change_rate: float, tie_rate: float,
                 late_rate: float, add_column_at_batch: int) -> None:
        self.rng = random.Random(seed)
        self.base = BaseData(seed, scale)
        self.batches = batches
        self.changes_per_batch = changes_per_batch
        self.mix = mix
        self.multi_change_rate = multi_change_rate
        self.tie_rate = tie_rate
        self.late_rate = late_rate
        self.add_column_at_batch = add_column_at_batch
        self.overlay: dict[str, dict[Key, Row | None]] = {t: {} for t in TABLES}
        self.item_lines: dict[int, set[int]] = {}
        self.next_id = {"customer": scale + 1, "product": scale + 1, "order": 2 * scale + 1}
        self.counter = 0
        self.batch = 0
        self.ts = T0_US
        self._limit = T0_US
        self._gap = 1
        self._late_mode: str | None = None
        self._out: list[Change] = []
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._serial = 0
        self._step = 0

    # --- database -----------------------------------------------------------

    def get(self, table: str, key: Key) -> Row | None:
        layer = self.overlay[table]
        if key in layer:
            return layer[key]
        return self.base.row(table, key)

    def next_counter(self) -> int:
        self.counter += 1
        return self.counter

    @property
    def column_active(self) -> bool:
        n = self.add_column_at_batch
        return n > 0 and self.batch >= n

    def _pick(self, table: str, id_kind: str) -> int | None:
        upper = self.next_id[id_kind] - 1
        if upper < 1:
            return None
        for _ in range(60):
            k = self.rng.randint(1, upper)
            if self.get(table, (k,)) is not None:
                return k
        return None

    def _lines(self, oid: int) -> list[int]:
        """Live line numbers of an order."""
        n = self.base.n_lines(oid) if oid <= self.base.n_orders else 0
        candidates = set(range(1, n + 1)) | self.item_lines.get(oid, set())
        return [ln for ln in sorted(candidates) if self.get("order_items", (oid, ln)) is not None]

    def _next_line(self, oid: int) -> int:
        n = self.base.n_lines(oid) if oid <= self.base.n_orders else 0
        return max([n, *self.item_lines.get(oid, set())]) + 1

    # --- transactions -------------------------------------------------------

    def _begin(self, tie: bool | None = None) -> None:
        """Start a transaction: its changes share one commit timestamp."""
        if tie is None:
            tie = bool(self._out) and self.rng.random() < self.tie_rate
        if not tie:
            self.ts = min(self.ts + 1 + self.rng.randrange(2 * self._gap), self._limit)

    def _emit(self, table: str, op: str, row: Row) -> None:
        key = TABLES[table].key_of(row)
        k, last = self.batch, self.batches
        delivery = k
        if k < last and self._late_mode != "on_time" and (
                self._late_mode == "late" or self.rng.random() < self.late_rate):
            delivery = k + 2 if k + 2 <= last and self.rng.random() < 0.3 else k + 1
        self._out.append(Change(table, op, key, row, self.ts, self.next_counter(), k, delivery))
        self.overlay[table][key] = None if op == "D" else row
        if table == "order_items":
            self.item_lines.setdefault(key[0], set()).add(key[1])

    def _later(self, delay_steps: int, action: Callable[[], None]) -> None:
        self._serial += 1
        heapq.heappush(self._queue, (self._step + delay_steps, self._serial, action))

    # --- new values -----------------------------------------------------------

    def _new_customer(self, cid: int) -> Row:
        r = self.rng
        first, fs = r.choice(FIRST_NAMES)
        last, ls = r.choice(LAST_NAMES)
        employer = _employer(r.randrange(100), r.randrange(len(EMPLOYERS)))
        tier = r.choice((*TIERS, None)) if self.column_active else None
        return (cid, first, last, employer, f"{fs}.{ls}{cid}@example.com", self.ts, tier)

    def _new_address(self, cid: int) -> Row:
        r = self.rng
        city, country = r.choice(CITIES)
        line = _address_line(r.randint(1, 200), r.choice(STREETS), r.randrange(100),
                             r.randint(1, 40))
        return (cid, line, city, country, self.ts)

    def _new_product(self, pid: int) -> Row:
        r = self.rng
        name = f"{r.choice(ADJECTIVES)} {r.choice(NOUNS)}"
        return (pid, name, r.choice(CATEGORIES), r.randint(99, 49_999), self.ts)

    def _new_item(self, oid: int, line: int) -> Row | None:
        pid = self._pick("product", "product")
        if pid is None:
            return None
        product = self.get("product", (pid,))
        assert product is not None
        return (oid, line, pid, self.rng.randint(1, 4), product[3], self.ts)

    def _mutate(self, table: str, row: Row) -> Row:
        r = self.rng
        new = list(row)
        roll = r.random()
        if table == "customer_master":
            if roll < 0.3:
                fs, ls = _SLUG.get(str(row[1]), "x"), _SLUG.get(str(row[2]), "y")
                new[4] = f"{fs}.{ls}.{r.randint(1, 9999)}@example.net"
            elif roll < 0.45:
                new[2] = r.choice(LAST_NAMES)[0]
            elif roll < 0.6:
                new[3] = _employer(r.randrange(100), r.randrange(len(EMPLOYERS)))
            elif roll < 0.7:
                new[1] = r.choice(FIRST_NAMES)[0]
            elif roll < 0.85 and self.column_active:
                new[6] = r.choice((*TIERS, None))
            new[5] = self.ts  # otherwise: only row_audit_ts changes
        elif table == "customer_address":
            if roll < 0.5:
                others = [c for c in CITIES if c[0] != row[2]]
                new[2], new[3] = r.choice(others)
            if roll < 0.7:
                new[1] = _address_line(r.randint(1, 200), r.choice(STREETS), r.randrange(100),
                                       r.randint(1, 40))
            new[4] = self.ts
        elif table == "product":
            if roll < 0.5:
                price = int(row[3])  # type: ignore[arg-type]
                step = max(1, price * r.randint(1, 20) // 100)
                new[3] = max(99, price + r.choice((-1, 1)) * step)
            elif roll < 0.7:
                new[1] = f"{r.choice(ADJECTIVES)} {r.choice(NOUNS)}"
            new[4] = self.ts
        elif table == "orders":
            status = row[3]
            if status == "PLACED":
                new[3] = "SHIPPED" if roll < 0.7 else "CANCELLED"
            elif status == "SHIPPED":
                new[3] = "DELIVERED"
            new[4] = self.ts
        else:
            if roll < 0.7:
                new[3] = r.randint(1, 9)
            new[5] = self.ts
        return tuple(new)

    # --- actions (each one transaction already begun) -----------------------

    def insert_customer(self, cid: int | None = None) -> int:
        if cid is None:
            cid = self.next_id["customer"]
            self.next_id["customer"] += 1
        self._emit("customer_master", "I", self._new_customer(cid))
        self._emit("customer_address", "I", self._new_address(cid))
        return cid

    def insert_product(self, pid: int | None = None) -> int:
        if pid is None:
            pid = self.next_id["product"]
            self.next_id["product"] += 1
        self._emit("product", "I", self._new_product(pid))
        return pid

    def insert_order(self, oid: int | None = None) -> int | None:
        cust = self._pick("customer_master", "customer")
        if cust is None:
            return None
        if oid is None:
            oid = self.next_id["order"]
            self.next_id["order"] += 1
        self._emit("orders", "I", (oid, cust, self.ts, "PLACED", self.ts))
        for line in range(1, 1 + self.rng.randint(1, 5)):  # a dead order has no live line
            item = self._new_item(oid, line)
            if item is not None:
                self._emit("order_items", "I", item)
        return oid

    def insert_item(self, oid: int | None = None, line: int | None = None) -> Key | None:
        if oid is None:
            oid = self._pick("orders", "order")
            if oid is None:
                return None
        if self.get("orders", (oid,)) is None:
            return None
        line = line if line is not None else self._next_line(oid)
        item = self._new_item(oid, line)
        if item is None:
            return None
        self._emit("order_items", "I", item)
        return (oid, line)

    def update(self, table: str, key: Key) -> bool:
        row = self.get(table, key)
        if row is None:
            return False
        self._emit(table, "U", self._mutate(table, row))
        return True

    def delete_customer(self, cid: int) -> None:
        row = self.get("customer_master", (cid,))
        if row is not None:
            self._emit("customer_master", "D", row)
        addr = self.get("customer_address", (cid,))
        if addr is not None:
            self._emit("customer_address", "D", addr)

    def delete_order(self, oid: int) -> None:
        row = self.get("orders", (oid,))
        if row is None:
            return
        self._emit("orders", "D", row)
        for line in self._lines(oid):
            item = self.get("order_items", (oid, line))
            assert item is not None
            self._emit("order_items", "D", item)

    def delete_row(self, table: str, key: Key) -> None:
        row = self.get(table, key)
        if row is not None:
            self._emit(table, "D", row)

    def _pick_item(self) -> Key | None:
        for _ in range(10):
            oid = self._pick("orders", "order")
            if oid is None:
                return None
            lines = self._lines(oid)
            if lines:
                return (oid, self.rng.choice(lines))
        return None

    # --- a batch --------------------------------------------------------------

    def generate_batch(self, batch: int) -> list[Change]:
        """Commit about `changes_per_batch` row changes in the batch's hour."""
        self.batch = batch
        self._out = []
        self._queue = []
        self._step = 0
        start = T0_US + batch * HOUR_US
        self.ts = start + self.rng.randrange(1_000_000)
        self._limit = start + HOUR_US * 95 // 100
        self._gap = max(1, HOUR_US * 80 // 100 // max(1, self.changes_per_batch))
        self._forced_traps()
        idle = 0
        while len(self._out) < self.changes_per_batch and idle < 10_000:
            before = len(self._out)
            if self._queue and self._queue[0][0] <= self._step:
                heapq.heappop(self._queue)[2]()
            else:
                self._primary()
            self._step += 1
            idle = idle + 1 if len(self._out) == before else 0  # e.g. nothing left to delete
        return self._out

    def _forced_traps(self) -> None:
        """One instance per batch of each trap whose rate is not zero."""
        if self.tie_rate > 0:
            cid = self._pick("customer_master", "customer")
            if cid is not None:  # two updates of one key, same commit timestamp
                self._begin(tie=False)
                self.update("customer_master", (cid,))
                self._begin(tie=True)
                self.update("customer_master", (cid,))
            self._begin(tie=False)  # insert and update of one key, same timestamp
            pid = self.insert_product()
            self._begin(tie=True)
            self.update("product", (pid,))
            cid = self._pick("customer_master", "customer")
            if cid is not None:  # delete and re-insert of one key, same timestamp
                self._begin(tie=False)
                self.delete_customer(cid)
                self._begin(tie=True)
                self.insert_customer(cid)
        oid = self._pick("orders", "order")
        if oid is not None:  # delete, then re-insert later in the batch
            self._begin(tie=False)
            self.delete_order(oid)
            self._begin(tie=False)
            self.insert_order(oid)
        if self.late_rate > 0 and self.batch < self.batches:
            cid = self._pick("customer_master", "customer")
            if cid is not None:  # an update delivered late, older than an on-time delete
                self._begin(tie=False)
                self._late_mode = "late"
                self.update("customer_master", (cid,))
                self._begin(tie=False)
                self._late_mode = "on_time"
                self.delete_customer(cid)
                self._late_mode = None

    def _primary(self) -> None:
        r = self.rng
        op = r.choices("IUD", weights=self.mix)[0]
        self._begin()
        if op == "I":
            kind = r.choices(("customer", "product", "order", "item"), (25, 10, 45, 20))[0]
            if kind == "customer":
                self._maybe_more("customer_master", (self.insert_customer(),))
            elif kind == "product":
                self._maybe_more("product", (self.insert_product(),))
            elif kind == "order":
                oid = self.insert_order()
                if oid is not None:
                    self._maybe_more("orders", (oid,))
            else:
                key = self.insert_item()
                if key is not None:
                    self._maybe_more("order_items", key)
        elif op == "U":
            table = r.choices(tuple(TABLES), (25, 20, 10, 30, 15))[0]
            key2 = self._pick_item() if table == "order_items" else self._pick_key(table)
            if key2 is not None and self.update(table, key2):
                self._maybe_more(table, key2)
        else:
            kind = r.choices(("customer", "product", "order", "item"), (20, 10, 30, 40))[0]
            self._delete(kind)

    def _pick_key(self, table: str) -> Key | None:
        id_kind = {"customer_master": "customer", "customer_address": "customer",
                   "product": "product", "orders": "order"}[table]
        k = self._pick(table, id_kind)
        return None if k is None else (k,)

    def _delete(self, kind: str) -> None:
        again = self.rng.random() < REINSERT_SHARE
        delay = self.rng.randint(1, 6)
        if kind == "customer":
            cid = self._pick("customer_master", "customer")
            if cid is not None:
                self.delete_customer(cid)
                if again:
                    self._later(delay, lambda: self._reinsert("customer_master", cid))
        elif kind == "product":
            pid = self._pick("product", "product")
            if pid is not None:
                self.delete_row("product", (pid,))
                if again:
                    self._later(delay, lambda: self._reinsert("product", pid))
        elif kind == "order":
            oid = self._pick("orders", "order")
            if oid is not None:
                self.delete_order(oid)
                if again:
                    self._later(delay, lambda: self._reinsert("orders", oid))
        else:
            key = self._pick_item()
            if key is not None:
                self.delete_row("order_items", key)
                if again:
                    self._later(delay, lambda: self._reinsert("order_items", key[0], key[1]))

    def _reinsert(self, table: str, first: int, line: int = 0) -> None:
        if self.get(table, (first, line) if line else (first,)) is not None:
            return
        self._begin()
        if table == "customer_master":
            self.insert_customer(first)
        elif table == "product":
            self.insert_product(first)
        elif table == "orders":
            self.insert_order(first)
        else:
            self.insert_item(first, line)

    def _maybe_more(self, table: str, key: Key) -> None:
        """Give the key 1-3 more changes later in the batch (multi-change)."""
        if self.rng.random() >= self.multi_change_rate:
            return
        for _ in range(self.rng.randint(1, 3)):
            self._later(self.rng.randint(1, 6), lambda: self._follow_up(table, key))

    def _follow_up(self, table: str, key: Key) -> None:
        if self.get(table, key) is not None:
            self._begin()
            self.update(table, key)


# --- helpers used by the file emission --------------------------------------

def split_sizes(n: int, max_rows: int, rng: random.Random) -> list[int]:
    """Sizes of the CDC files holding n changes: at most max_rows each, and
    sometimes two files for a small flush."""
    if n == 0:
        return []
    parts = math.ceil(n / max_rows)
    if parts == 1 and n >= 4 and rng.random() < 0.25:
        parts = 2
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def merge_keys(base: Iterator[tuple[Key, Row]],
               extra: list[Key]) -> Iterator[tuple[Key, Row | None]]:
    """Union of full-load (key, row) pairs and sorted extra keys, in key order;
    keys only in `extra` come with row None."""
    it = iter(extra)
    nxt = next(it, None)
    for key, row in base:
        while nxt is not None and nxt < key:
            yield nxt, None
            nxt = next(it, None)
        if nxt == key:
            nxt = next(it, None)
        yield key, row
    while nxt is not None:
        yield nxt, None
        nxt = next(it, None)


def states_of(versions: list[tuple[int, int, Row | None]] | None, load_row: Row | None,
              batches: int) -> list[Row | None]:
    """A key's row after each batch 0..batches: the delivered version with the
    greatest change counter (= commit order), or the full-load row."""
    if not versions:
        return [load_row] * (batches + 1)
    out: list[Row | None] = []
    for k in range(batches + 1):
        best, best_counter = load_row, -1
        for delivery, counter, row in versions:
            if delivery <= k and counter > best_counter:
                best, best_counter = row, counter
        out.append(best)
    return out


# --- the whole run ------------------------------------------------------------

MANAGED = ("dms", "debezium", TRUTH_DIR, MANIFEST)


@dataclass
class SimulationConfig:
    """Every knob of a simulation (the CLI flags, minus --quiet/--overwrite)."""

    out: Path
    seed: int = 42
    scale: int = 1000
    batches: int = 3
    changes_per_batch: int | None = None  # None: max(20, 5% of scale)
    mix: tuple[int, int, int] = (40, 50, 10)
    multi_change_rate: float = 0.1
    tie_rate: float = 0.05
    late_rate: float = 0.03
    redeliver_rate: float = 0.03
    add_column_at_batch: int = 2
    malformed_rate: float = 0.01
    format: str = "csv"
    full_load_op: str = "I"
    csv_null: str = "empty"
    csv_header: bool = True
    load_file_rows: int = 100_000
    cdc_file_rows: int = 50_000

    @property
    def effective_changes_per_batch(self) -> int:
        if self.changes_per_batch is not None:
            return self.changes_per_batch
        return max(20, self.scale * 5 // 100)

    def validate(self) -> None:
        problems = []
        if self.scale < 1:
            problems.append("scale must be >= 1")
        if self.batches < 0:
            problems.append("batches must be >= 0")
        if self.effective_changes_per_batch < 1:
            problems.append("changes-per-batch must be >= 1")
        if len(self.mix) != 3 or min(self.mix) < 0 or sum(self.mix) <= 0:
            problems.append("mix must be three non-negative weights insert,update,delete")
        for name in ("multi_change_rate", "tie_rate", "late_rate", "redeliver_rate",
                     "malformed_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name.replace('_', '-')} must be within [0, 1]")
        if self.add_column_at_batch < 0:
            problems.append("add-column-at-batch must be >= 0")
        if self.format not in FORMATS:
            problems.append(f"format must be one of {', '.join(FORMATS)}")
        if self.full_load_op not in ("I", "absent"):
            problems.append("full-load-op must be I or absent")
        if self.csv_null not in ("empty", "NULL"):
            problems.append("csv-null must be empty or NULL")
        if self.load_file_rows < 1 or self.cdc_file_rows < 1:
            problems.append("load-file-rows and cdc-file-rows must be >= 1")
        if problems:
            raise ValueError("; ".join(problems))

    def knobs(self) -> dict[str, Any]:
        """All knobs (not the output directory), as recorded in the manifest."""
        doc = asdict(self)
        del doc["out"]
        doc["mix"] = list(self.mix)
        doc["changes_per_batch"] = self.effective_changes_per_batch
        return doc


@dataclass(frozen=True)
class SimulationResult:
    out: Path
    files: int
    rows: int
    changes: int
    rejects: int
    seconds: float


class _Progress:
    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.started = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def __call__(self, message: str) -> None:
        if self.stream is not None:
            print(f"[simulate {self.elapsed:7.1f}s] {message}", file=self.stream, flush=True)


def _prepare(out: Path, overwrite: bool) -> None:
    existing = [out / name for name in MANAGED if (out / name).exists()]
    if existing and not overwrite:
        raise FileExistsError(f"{out} already holds a simulation ({existing[0].name}); "
                              "use --overwrite to replace it")
    for path in existing:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _records(changes: list[Change]) -> list[Record]:
    return [Record(c.op, c.commit_us, c.seq, c.counter, c.row) for c in changes]


def simulate(config: SimulationConfig, *, overwrite: bool = False,
             log: TextIO | None = None) -> SimulationResult:
    """Run a simulation into `config.out`: change files, truth, manifest."""
    config.validate()
    progress = _Progress(log)
    out = Path(config.out)
    _prepare(out, overwrite)
    last = config.batches
    n = config.add_column_at_batch
    added_from = n if 1 <= n <= last else None
    sim = Simulator(config.seed, config.scale, last, config.effective_changes_per_batch,
                    config.mix, config.multi_change_rate, config.tie_rate, config.late_rate,
                    config.add_column_at_batch)
    emitter = FileEmitter(out, config.format, sim.rng, sim.next_counter,
                          csv_null=config.csv_null, full_load_op=config.full_load_op,
                          load_file_rows=config.load_file_rows, dup_rate=config.redeliver_rate,
                          malformed_rate=config.malformed_rate, csv_header=config.csv_header)
    truths = {name: TableTruth(out / TRUTH_DIR, t, last,
                               added_from if t.added_column else None)
              for name, t in TABLES.items()}
    history: dict[str, dict[Key, list[tuple[int, int, Row | None]]]] = {t: {} for t in TABLES}
    pending_late: dict[int, list[Change]] = {}

    def with_added(table: str, origin: int) -> bool:
        return (TABLES[table].added_column is not None and added_from is not None
                and origin >= added_from)

    total_changes = 0
    for k in range(1, last + 1):
        changes = sim.generate_batch(k)
        total_changes += len(changes)
        for ch in changes:
            truths[ch.table].add_version(ch.delivery, ch.op, ch.commit_us, ch.seq, ch.row)
            image = None if ch.op == "D" else ch.row
            history[ch.table].setdefault(ch.key, []).append((ch.delivery, ch.counter, image))
            if ch.delivery != k:
                pending_late.setdefault(ch.delivery, []).append(ch)
        window = T0_US + k * HOUR_US
        redeliver_in = k + 1 if k < last else k
        before = len(emitter.files)
        for table in TABLES:
            mine = [c for c in changes if c.table == table and c.delivery == k]
            pos, last_write = 0, 0
            for size in split_sizes(len(mine), config.cdc_file_rows, sim.rng):
                chunk = mine[pos:pos + size]
                pos += size
                write_us = max(chunk[-1].commit_us + sim.rng.randint(200_000, 3_000_000),
                               last_write + 1000)
                last_write = write_us
                emitter.write_cdc(k, table, _records(chunk), "cdc", write_us,
                                  with_added(table, k), redeliver_in)
        late = pending_late.pop(k, [])
        for table in TABLES:
            for origin in sorted({c.origin for c in late if c.table == table}):
                chunk = [c for c in late if c.table == table and c.origin == origin]
                write_us = window + sim.rng.randint(1_000_000, HOUR_US // 2)
                emitter.write_cdc(k, table, _records(chunk), "late", write_us,
                                  with_added(table, origin), redeliver_in)
        newest = max([window, *(emitter.written_at[f.file] for f in emitter.files[before:])])
        emitter.redeliver(k, newest + 1_000_000, newest + 60_000_000)
        written = emitter.files[before:]
        progress(f"batch {k}/{last}: {len(changes)} changes, {len(written)} files, "
                 f"{sum(f.rows for f in written)} rows")

    for index, name in enumerate(TABLES):
        # DMS stamps a full-load row when it copies it: each table's at its own time
        load_us = T0_US + index * LOAD_STAGGER_US
        load_ts = format_ts(load_us)
        truth = truths[name]
        truth.open_states()
        hist = history[name]

        def walk(name: str = name, truth: TableTruth = truth,
                 hist: dict[Key, list[tuple[int, int, Row | None]]] = hist,
                 load_us: int = load_us, load_ts: str = load_ts) -> Iterator[Record]:
            for key, load_row in merge_keys(sim.base.rows(name), sorted(hist)):
                cells = None if load_row is None else truth.render(load_row)
                line = truth.write_key(load_row, load_ts,
                                       states_of(hist.get(key), load_row, last), cells)
                if load_row is not None:
                    yield Record("I", load_us, None, 0, load_row, snapshot=True, texts=cells,
                                 encoded=line)

        rows = emitter.write_load(name, walk())
        truth.close()
        progress(f"full load {name}: {rows} rows; truth written")

    batches = _manifest_batches(emitter, last)
    ordered = [FileEntry(b["batch"], f["table"], f["path"], f["rows"], f["kind"])
               for b in batches for f in b["files"]]
    write_files(out, ordered)
    write_rejects(out, emitter.rejects)
    write_manifest(out, config.knobs(), batches)
    total_rows = sum(f.rows for f in ordered)
    progress(f"done: {len(ordered)} files, {total_rows} rows, {total_changes} changes, "
             f"{len(emitter.rejects)} rejects, {total_rows / max(progress.elapsed, 1e-9):,.0f} "
             "rows/s")
    return SimulationResult(out, len(ordered), total_rows, total_changes, len(emitter.rejects),
                            progress.elapsed)


def _manifest_batches(emitter: FileEmitter, last: int) -> list[dict[str, Any]]:
    order = {name: i for i, name in enumerate(TABLES)}
    batches = []
    for k in range(last + 1):
        entries = [f for f in emitter.files if f.batch == k]
        if k > 0:
            entries.sort(key=lambda f: (emitter.written_at[f.file], order[f.table], f.file))
        else:
            entries.sort(key=lambda f: (order[f.table], f.file))
        start = T0_US + k * HOUR_US
        batches.append({
            "batch": k,
            "window_start": format_ts(start),
            "window_end": format_ts(start + HOUR_US) if k else format_ts(start),
            "files": [{"path": f.file, "table": f.table, "rows": f.rows, "kind": f.kind}
                      for f in entries],
        })
    return batches
