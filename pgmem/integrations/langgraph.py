"""A LangGraph ``BaseStore`` backed by pgmem (extra ``langgraph``).

Swap LangGraph's store for pgmem with one line::

    from pgmem import Memory
    from pgmem.integrations.langgraph import PgmemStore

    graph = builder.compile(store=PgmemStore(Memory(tenant="acme")))

and the graph's long-term memory gets pgmem's deduplication, decay, scoring and
row-level-security tenant isolation. How the store's model maps onto memories:

- **Namespace → subject.** A namespace is one pgmem subject, its labels joined with
  ``.`` (``("memories", "alice")`` is subject ``memories.alice``); LangGraph forbids
  ``.`` inside a label, so the mapping is one-to-one. Use the namespace ``("alice",)``
  to share memories with ``Memory.add(..., user_id="alice")``.
- **Item → memory.** The memory's content is the value's ``"content"`` string when it
  has one, else the value as canonical JSON. The key and the exact value live in the
  memory's metadata (``langgraph_keys``, ``langgraph_values``), the key sealed
  (:func:`seal`) where redaction cannot reach it, so every key round-trips exactly;
  values are redacted as memory content is. Memories written
  without the store (``Memory.add``, the worker, ``pgmem mcp``) have no key and are not
  items.
- **Dedup.** Putting a value whose content the subject already holds adds the key to
  that memory (``pgmem.remember`` reinforces it) instead of storing a copy; each key
  keeps its own value. Deleting a key removes it from the memory, and the memory is
  forgotten (soft delete, history kept) with its last key. Re-putting a key edits its
  memory in place (``pgmem.update_memory``) when no other key shares it.
  When the worker merges a near-duplicate memory into another (``pgmem.merge``), the
  merged memory keeps its keys and values, so its items still answer ``get`` and
  listing (query search ranks the memory it merged into); putting or deleting one of
  them moves its keys to live memories.
- **Search.** With a query, each matching namespace is ranked by ``pgmem.recall``
  (vector + full text, importance, recency; returned memories are reinforced) and
  ``SearchItem.score`` is recall's score. Without one, items come newest first.
  ``filter`` (exact values and ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte``) is
  applied to the stored values: of every item without a query, of the best
  ``RECALL_K_MAX`` memories per namespace with one. A query is never read as a time.
- **State.** An item's memory is kept (``pgmem.keep``): decay, archival and the
  capacity cap leave it alone, as a key-value store must.
- Per-item ``index`` settings are accepted and ignored (every memory is searchable);
  TTLs are not supported (``supports_ttl = False``).

Every operation of a :meth:`PgmemStore.batch` runs in one transaction.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from pgmem.client import Memory
from pgmem.queries import integrations as queries
from pgmem.rows import Connection, Row, fetch_all

__all__ = ["PgmemStore", "check_op", "namespace_of", "seal", "subject_of", "unseal"]

KEYS = "langgraph_keys"  # metadata: the store keys a memory holds, sealed
VALUES = "langgraph_values"  # metadata: sealed key -> the value put under it
# Containment on an empty array matches every memory that holds store keys.
ITEMS_ONLY: Mapping[str, Any] = {KEYS: []}
# A memory the worker merged into a near-duplicate keeps its keys and values: its
# items stay readable until they are put or deleted again.
LIVE = ("active", "merged")
# The most hits pgmem.recall ranks for one query (its k): a search with a query and
# a filter finds matching items among that many of each namespace.
RECALL_K_MAX = 1000
# Item memories read per statement when a search without a query lists them.
PAGE = 500
SEPARATOR = "."  # LangGraph refuses '.' inside a namespace label
# pgmem.update_memory: the new content duplicates another active memory (README).
PM_UPDATE_DUPLICATE = "PM051"


# A key is stored sealed: "k:" and its UTF-8 bytes as letters a-p, a nibble each. No
# redaction or injection rule reads a run of those letters, so a key that looks like
# personal data ("alice@example.com") comes back as it was put, and two such keys stay
# two (redacted, both would read "[REDACTED:email]"). The row is the tenant's, behind
# its row-level security like any memory.
_SEAL = "k:"
_NIBBLES = "abcdefghijklmnop"


def seal(key: str) -> str:
    """The form of a store key in a memory's metadata."""
    return _SEAL + "".join(_NIBBLES[b >> 4] + _NIBBLES[b & 15] for b in key.encode("utf-8"))


def unseal(stored: str) -> str:
    """The store key a sealed metadata key stands for."""
    letters = stored.removeprefix(_SEAL)
    pairs = zip(letters[::2], letters[1::2], strict=True)
    return bytes(_NIBBLES.index(hi) * 16 + _NIBBLES.index(lo) for hi, lo in pairs).decode("utf-8")


def _check_labels(labels: Sequence[object]) -> None:
    for label in labels:
        if not isinstance(label, str) or not label or SEPARATOR in label:
            raise InvalidNamespaceError(
                f"Namespace labels must be non-empty strings without '.', not {label!r}"
            )


def subject_of(namespace: Sequence[str]) -> str:
    """The pgmem subject of a LangGraph namespace: its labels joined with '.'."""
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    _check_labels(namespace)
    return SEPARATOR.join(namespace)


def check_op(op: Op) -> None:
    """InvalidNamespaceError for an op whose namespace labels could address another
    namespace once joined ('.' inside a label, an empty or non-string label): ops given
    to :meth:`PgmemStore.batch` directly have not been through BaseStore's checks.
    A search may name no prefix, and a listing's labels may be the wildcard '*'."""
    if isinstance(op, (GetOp, PutOp)):
        subject_of(op.namespace)
    elif isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            _check_labels([label for label in condition.path if label != "*"])


def namespace_of(subject: str) -> tuple[str, ...]:
    return tuple(subject.split(SEPARATOR))


def content_of(value: Mapping[str, Any]) -> str:
    """What pgmem stores, ranks and deduplicates: the 'content' text, else the JSON."""
    text = value.get("content")
    if isinstance(text, str) and text.strip():
        return text
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class PgmemStore(BaseStore):
    """LangGraph's ``BaseStore`` on pgmem memories; see the module for the mapping.

    :param memory: the :class:`pgmem.Memory` to act through (its tenant, its
        connection or the caller's, its embedder). Calls are serialized: one client
        is one connection.
    """

    supports_ttl = False

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._lock = threading.Lock()

    # ----------------------------------------------------------- BaseStore API

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in one transaction, as LangGraph's stores do: the reads first,
        seeing the store as it was before the batch, then the writes, the last
        :class:`PutOp` of a (namespace, key) winning."""
        ops = list(ops)
        for op in ops:  # the whole batch is refused before any SQL runs
            check_op(op)
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        with self._lock, self.memory.transaction() as conn:
            for i, op in enumerate(ops):
                if isinstance(op, PutOp):
                    puts.pop((op.namespace, op.key), None)  # re-insert: keeps the last order
                    puts[(op.namespace, op.key)] = op
                else:
                    results[i] = self._read(conn, op)
            # One writer per namespace at a time, locked in one order: two sessions
            # putting the same key cannot both insert, nor deadlock on each other.
            if puts:
                subjects = sorted({subject_of(op.namespace) for op in puts.values()})
                fetch_all(conn, queries.LOCK_LANGGRAPH_NAMESPACES, {"subjects": subjects})
            for op in puts.values():
                self._put(conn, op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _read(self, conn: Connection, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(conn, op.namespace, op.key)
        if isinstance(op, SearchOp):
            return self._search(conn, op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(conn, op)
        raise ValueError(f"unknown store operation: {op!r}")

    def _put(self, conn: Connection, op: PutOp) -> None:
        subject = subject_of(op.namespace)
        key = seal(op.key)
        self._detach(conn, subject, key, keep=op.value)
        if op.value is not None:
            self._attach(conn, subject, key, op.value)

    # -------------------------------------------------------------- items

    # Below, ``key`` is a sealed key (:func:`seal`); items carry the key as put.

    def _holder(self, conn: Connection, subject: str, key: str) -> Row | None:
        """The memory holding ``key`` in this subject (active, or merged), if any."""
        rows = self.memory.get_all(subject, filters={KEYS: [key]}, limit=1, status=LIVE, conn=conn)
        return rows[0] if rows else None

    def _get(self, conn: Connection, namespace: tuple[str, ...], key: str) -> Item | None:
        row = self._holder(conn, subject_of(namespace), seal(key))
        return None if row is None else _item(row, seal(key), namespace)

    def _detach(
        self, conn: Connection, subject: str, key: str, *, keep: Mapping[str, Any] | None
    ) -> None:
        """Take ``key`` off its memory. A memory that holds only this key and whose new
        value (``keep``) fits it is edited in place instead, and the key is then
        attached already; otherwise the memory is forgotten with its last key. A
        merged memory cannot be edited (PM050): it is forgotten and its other keys
        are put again, each finding its place as a new put would."""
        row = self._holder(conn, subject, key)
        if row is None:
            return
        keys = [k for k in row["metadata"].get(KEYS, []) if k != key]
        values = {k: v for k, v in row["metadata"].get(VALUES, {}).items() if k != key}
        active = row["status"] == "active"
        if active and not keys and keep is not None and self._edit_in_place(conn, row, key, keep):
            return
        if active and keys:
            self.memory.update(row["memory_id"], metadata={KEYS: keys, VALUES: values}, conn=conn)
            return
        self.memory.delete(row["memory_id"], conn=conn)
        for other in keys:
            self._attach(conn, subject, other, values.get(other, {}))

    def _edit_in_place(
        self, conn: Connection, row: Row, key: str, value: Mapping[str, Any]
    ) -> bool:
        content = content_of(value)
        metadata = {KEYS: [key], VALUES: {key: dict(value)}}
        try:  # in a savepoint (Memory's): a refused edit leaves the batch intact
            self.memory.update(
                row["memory_id"],
                content if content != row["content"] else None,
                metadata=metadata,
                conn=conn,
            )
        except psycopg.Error as exc:
            if exc.sqlstate != PM_UPDATE_DUPLICATE:
                raise
            return False  # the new content is another memory's: the key moves there
        return True

    def _attach(self, conn: Connection, subject: str, key: str, value: Mapping[str, Any]) -> None:
        if self._holder(conn, subject, key) is not None:
            return  # edited in place by _detach
        stored = dict(value)
        result = self.memory.add(
            content_of(value),
            subject,
            infer=False,
            metadata={KEYS: [key], VALUES: {key: stored}},
            # Items are the graph's own key-value state: putting one never retires
            # another key's item as a contradiction.
            check_conflicts=False,
            conn=conn,
        )[0]
        if result["action"] == "rejected":
            raise ValueError(f"pgmem refused the value of {unseal(key)!r}: {result.get('reason')}")
        # An item is the graph's state: maintenance never decays, archives or evicts it.
        self.memory.keep(result["memory_id"], conn=conn)
        if result["action"] in ("inserted", "merge_pending"):
            return
        # reinforced / deduplicated: the subject holds this content already; the key
        # joins that memory, with its own value.
        holder = self.memory.get(result["memory_id"], conn=conn)
        if holder is None:
            raise RuntimeError(f"memory {result['memory_id']} vanished during the put")
        meta = holder["metadata"]
        keys = [*meta.get(KEYS, []), key]
        values = {**meta.get(VALUES, {}), key: stored}
        self.memory.update(holder["memory_id"], metadata={KEYS: keys, VALUES: values}, conn=conn)

    # ------------------------------------------------------------- search

    def _subjects(self, conn: Connection, prefix: tuple[str, ...]) -> list[str]:
        params = {"prefix": subject_of(prefix) if prefix else None}
        return [row["subject"] for row in fetch_all(conn, queries.LANGGRAPH_NAMESPACES, params)]

    def _search(self, conn: Connection, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        found: list[tuple[float, datetime, int, SearchItem]] = []
        for subject in self._subjects(conn, op.namespace_prefix):
            namespace = namespace_of(subject)
            rows: list[dict[str, Any]]
            if op.query:
                # A query is words to rank by, not a time to recall within: "what
                # happened in 1999?" must not become a valid-time window. A filter
                # thins the ranked hits out: then as many as recall ranks.
                k = RECALL_K_MAX if op.filter else min(wanted, RECALL_K_MAX)
                rows = self.memory.search(
                    op.query, subject, k, filters=ITEMS_ONLY, parse_time=False, conn=conn
                )
            else:
                rows = self._items_of(conn, subject, wanted if not op.filter else None)
            for row in rows:
                for key in row["metadata"].get(KEYS, []):
                    item = _item(row, key, namespace, score=row.get("score"))
                    if op.filter and not _matches(item.value, op.filter):
                        continue
                    rank = row["score"] if op.query else 0.0
                    found.append((rank, item.updated_at, row["memory_id"], item))
        # Best score first; without a query the most recently updated first, as
        # LangGraph's PostgresStore lists them.
        found.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
        return [t[3] for t in found[op.offset : op.offset + op.limit]]

    def _items_of(self, conn: Connection, subject: str, wanted: int | None) -> list[Row]:
        """The subject's item memories newest first: the first ``wanted``, or (None,
        as a filter needs) all of them, a page at a time."""
        rows: list[Row] = []
        while wanted is None or len(rows) < wanted:
            page = self.memory.get_all(
                subject, filters=ITEMS_ONLY, status=LIVE, limit=PAGE, offset=len(rows), conn=conn
            )
            rows += page
            if len(page) < PAGE:
                break
        return rows if wanted is None else rows[:wanted]

    def _list_namespaces(self, conn: Connection, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for subject in self._subjects(conn, ()):
            namespace = namespace_of(subject)
            if all(_ns_matches(namespace, c) for c in op.match_conditions or ()):
                depth = op.max_depth if op.max_depth is not None else len(namespace)
                namespaces.add(namespace[:depth])
        return sorted(namespaces)[op.offset : op.offset + op.limit]


# ----------------------------------------------------------------- helpers


def _item(
    row: Row, key: str, namespace: tuple[str, ...], *, score: float | None = None
) -> SearchItem:
    created: datetime = row["created_at"]
    updated: datetime = row.get("updated_at") or created
    value = row["metadata"].get(VALUES, {}).get(key, {})
    return SearchItem(namespace, unseal(key), value, created, updated, score)


_COMPARE = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: float(a) > float(b),
    "$gte": lambda a, b: float(a) >= float(b),
    "$lt": lambda a, b: float(a) < float(b),
    "$lte": lambda a, b: float(a) <= float(b),
}


def _matches(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics (its InMemoryStore's, which follow jsonb): a dict
    of ``$``-operators compares, another dict matches a subset of a nested object, a
    list matches element by element, anything else by equality."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            for op, operand in wanted.items():
                if op not in _COMPARE:
                    raise ValueError(f"Unsupported operator: {op}")
                try:
                    if not _COMPARE[op](actual, operand):
                        return False
                except (TypeError, ValueError):
                    return False
            return True
        return isinstance(actual, Mapping) and all(
            _matches(actual.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_matches(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _ns_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = condition.path
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
