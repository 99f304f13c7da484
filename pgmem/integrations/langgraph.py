"""A LangGraph ``BaseStore`` backed by pgmem (extra ``langgraph``).

Swap LangGraph's store for pgmem with one line::

    from pgmem import Memory
    from pgmem.integrations.langgraph import PgmemStore

    graph = builder.compile(store=PgmemStore(Memory(tenant="acme")))

and the graph's long-term memory lives in pgmem, behind its row-level-security
tenant isolation, ranked by its recall. How the store's model maps onto pgmem:

- **Namespace → subject.** A namespace is one pgmem subject, its labels joined with
  ``.`` (``("memories", "alice")`` is subject ``memories.alice``); LangGraph forbids
  ``.`` inside a label, so the mapping is one-to-one. Use the namespace ``("alice",)``
  to search the store's items together with ``Memory.add(..., user_id="alice")``'s
  memories.
- **Item → store item** (``pgmem.put_items``, ``get_items``, ``delete_items``): one
  key, one memory of its own (source ``store``), always. The value comes back exactly
  as put; the item's searchable text (its content) is the value's ``"content"``
  string when it has one, else the value as JSON, or the fields the put's ``index``
  names, and is redacted and checked for prompt injection as any memory's (a refused
  value raises ``ValueError`` naming the rule). Items are never deduplicated, merged
  or superseded, and memories written without the store never fold into them.
- **Search.** With a query, each matching namespace is ranked by ``pgmem.recall``
  (vector + full text, importance, recency) and ``SearchItem.score`` is recall's
  score. Without one, items come most recently updated first. ``filter`` (exact
  values and ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte``) is applied to the
  stored values: of every item without a query, of the best ``RECALL_K_MAX`` hits per
  namespace with one. A query is never read as a time.
- **State.** Items are kept: decay, archival and the capacity cap leave them alone.
  A ``ttl`` (minutes) makes an item expire: it is gone from every read at once, and
  the archive job sweeps it; reads with ``refresh_ttl`` extend it.
- **Index.** ``index=False`` keeps an item out of vector search: it is stored without
  a vector, and the worker's embed pass never gives it one (full text still finds
  it); a list of fields makes their text the item's searchable text.

Every :meth:`PgmemStore.batch` runs in one transaction: its reads, then one
statement per namespace for its puts and one for its deletes. Concurrent calls
(threads, or coroutines of one event loop) that wait for the store are run
together, as one batch.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
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
from langgraph.store.base.embed import get_text_at_path

from pgmem.client import Memory
from pgmem.ingest import as_jsonb
from pgmem.queries import client as client_queries
from pgmem.queries import integrations as queries
from pgmem.rows import Connection, Row, fetch_all

__all__ = ["PgmemStore", "check_op", "content_of", "namespace_of", "subject_of"]

# recall's metadata filter for store items (pgmem.put_items marks them so).
ITEMS_ONLY: Mapping[str, Any] = {"item": True}
# The most hits pgmem.recall ranks for one query (its k): a search with a query and
# a filter finds matching items among that many of each namespace.
RECALL_K_MAX = 1000
SEPARATOR = "."  # LangGraph refuses '.' inside a namespace label
# pgmem.put_items refused a text as a prompt injection.
PM_INJECTION = "PM024"
# Ops of concurrent callers run together, at most this many per transaction.
COALESCE_MAX = 1000


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


def content_of(value: Mapping[str, Any], index: Sequence[str] | None = None) -> str:
    """An item's searchable text: the text at the ``index`` fields when a put names
    them, else the value's 'content' string, else the value as JSON."""
    if index:
        texts = [text for path in index for text in get_text_at_path(value, path)]
        joined = "\n".join(t for t in texts if t.strip())
        if joined:
            return joined
    text = value.get("content")
    if isinstance(text, str) and text.strip():
        return text
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class _Pending:
    """Ops a caller waits on while another caller's batch runs."""

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops
        self.future: Future[list[Result]] = Future()


# What one caller of a group gets: its results, or the error its own ops raised.
Outcome = list[Result] | Exception
# A coroutine's ops and the future it awaits.
_Waiting = tuple[list[Op], "asyncio.Future[list[Result]]"]


class PgmemStore(BaseStore):
    """LangGraph's ``BaseStore`` on pgmem store items; see the module for the mapping.

    :param memory: the :class:`pgmem.Memory` to act through (its tenant, its
        connection or the caller's, its embedder). One batch runs at a time; callers
        who arrive meanwhile have their ops run together in the next.
    """

    supports_ttl = True

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._lock = threading.Lock()  # guards the queues
        self._queue: list[_Pending] = []  # threads' ops waiting for a run
        self._running = False  # a thread is running the queue
        # Coroutines' ops waiting for a run, and the task running them, per event loop.
        self._waiting: dict[asyncio.AbstractEventLoop, list[_Waiting]] = {}
        self._runners: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._one_run = threading.Lock()  # one transaction at a time: one client, one connection

    # ----------------------------------------------------------- BaseStore API

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in one transaction, as LangGraph's stores do: the reads first,
        seeing the store as it was before the batch, then the writes, the last
        :class:`PutOp` of a (namespace, key) winning. While a batch runs, the ops of
        other callers queue; the caller that runs next takes them all (up to
        ``COALESCE_MAX`` ops) into one transaction, and each gets its own results."""
        mine, lead = self._enqueue(ops)
        if lead:
            self._drain()
        return mine.future.result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` for coroutines: those of one event loop that call the store in
        the same turn of the loop have their ops run together, in a thread, and no
        thread waits per call."""
        listed = list(ops)
        for op in listed:
            check_op(op)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Result]] = loop.create_future()
        self._waiting.setdefault(loop, []).append((listed, future))
        if loop not in self._runners:
            self._runners[loop] = loop.create_task(self._run_waiting(loop))
        return await future

    async def _run_waiting(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run the loop's waiting ops, a group at a time, until none wait."""
        waiting = self._waiting[loop]
        try:
            while waiting:
                await asyncio.sleep(0)  # the coroutines started in this turn join in
                taken: list[_Waiting] = []
                size = 0
                while waiting and (not taken or size + len(waiting[0][0]) <= COALESCE_MAX):
                    size += len(waiting[0][0])
                    taken.append(waiting.pop(0))
                try:
                    outcomes = await asyncio.to_thread(self._outcomes, [ops for ops, _ in taken])
                except BaseException as exc:  # no caller may wait forever
                    for _, future in taken + waiting:
                        if not future.done():
                            future.set_exception(exc)
                    waiting.clear()
                    raise
                for (_, future), outcome in zip(taken, outcomes, strict=True):
                    if future.done():  # cancelled by its caller
                        continue
                    if isinstance(outcome, Exception):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            # No await since the last check: no coroutine can have joined meanwhile.
            del self._waiting[loop], self._runners[loop]

    def _enqueue(self, ops: Iterable[Op]) -> tuple[_Pending, bool]:
        """Queue ``ops``; True when the caller is to run the queue (no one else is)."""
        listed = list(ops)
        for op in listed:  # the whole batch is refused before any SQL runs
            check_op(op)
        pending = _Pending(listed)
        with self._lock:
            self._queue.append(pending)
            lead = not self._running
            self._running = True
        return pending, lead

    def _drain(self) -> None:
        """Run the queue, a group of callers at a time, until it is empty."""
        while True:
            with self._lock:
                taken: list[_Pending] = []
                size = 0
                while self._queue and (not taken or size + len(self._queue[0].ops) <= COALESCE_MAX):
                    size += len(self._queue[0].ops)
                    taken.append(self._queue.pop(0))
                if not taken:
                    self._running = False
                    return
            try:
                self._run_together(taken)
            except BaseException as exc:  # an interrupt: no caller may wait forever
                with self._lock:
                    stranded, self._queue = taken + self._queue, []
                    self._running = False
                for p in stranded:
                    if not p.future.done():
                        p.future.set_exception(exc)
                raise

    async def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> None:
        """AsyncPostgresStore's call, with nothing to start here: every read leaves an
        item out once its ttl has passed, and pgmem's archive job (pg_cron) sweeps it."""

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """AsyncPostgresStore's call: there is no sweeper thread to stop."""
        return True

    def _run_together(self, pending: list[_Pending]) -> None:
        for p, outcome in zip(pending, self._outcomes([p.ops for p in pending]), strict=True):
            if isinstance(outcome, Exception):
                p.future.set_exception(outcome)
            else:
                p.future.set_result(outcome)

    def _outcomes(self, groups: list[list[Op]]) -> list[Outcome]:
        """One transaction for the ops of every caller (a group each); when it fails,
        each group runs alone, so that an op refused fails its own caller only."""
        with self._one_run:
            if len(groups) > 1:
                try:
                    results = self._run([op for ops in groups for op in ops])
                except Exception:
                    pass
                else:
                    outcomes: list[Outcome] = []
                    start = 0
                    for ops in groups:
                        outcomes.append(results[start : start + len(ops)])
                        start += len(ops)
                    return outcomes
            alone: list[Outcome] = []
            for ops in groups:
                try:
                    alone.append(self._run(ops))
                except Exception as exc:
                    alone.append(exc)
            return alone

    def _run(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)  # re-insert: keeps the last order
                puts[(op.namespace, op.key)] = op
        writes = [op for op in puts.values() if op.value is not None]
        texts = {id(op): content_of(op.value or {}, op.index or None) for op in writes}
        self.memory._check_sizes(texts.values())  # refused before it is embedded
        # Models run before the transaction opens: no lock waits on them.
        embedded = [op for op in writes if op.index is not False]
        vectors, _ = self.memory._vectors([texts[id(op)] for op in embedded])
        vector_of = {id(op): v for op, v in zip(embedded, vectors, strict=True)}
        with self.memory.transaction() as conn:
            gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
            items = self._get_many(conn, [op for _, op in gets])
            for (i, _), item in zip(gets, items, strict=True):
                results[i] = item
            # Reads see the store as it was before the batch: equal ones, as
            # concurrent callers send, are answered once.
            answered: dict[str, list[Any]] = {}
            for i, op in enumerate(ops):
                if isinstance(op, (SearchOp, ListNamespacesOp)):
                    if repr(op) not in answered:
                        answered[repr(op)] = (
                            list(self._search(conn, op))
                            if isinstance(op, SearchOp)
                            else list(self._list_namespaces(conn, op))
                        )
                    results[i] = list(answered[repr(op)])  # each caller its own list
                elif not isinstance(op, (GetOp, PutOp)):
                    raise ValueError(f"unknown store operation: {op!r}")
            for subject, group in _by_subject(writes).items():
                self._put(conn, subject, group, texts, vector_of)
            deletes = [op for op in puts.values() if op.value is None]
            for subject, group in _by_subject(deletes).items():
                fetch_all(
                    conn,
                    client_queries.DELETE_ITEMS,
                    {"subject": subject, "keys": [op.key for op in group]},
                )
        return results

    # -------------------------------------------------------------- items

    def _put(
        self,
        conn: Connection,
        subject: str,
        ops: list[PutOp],
        texts: Mapping[int, str],
        vector_of: Mapping[int, list[float] | None],
    ) -> None:
        items = []
        for op in ops:
            assert op.value is not None
            item: dict[str, Any] = {
                "key": op.key,
                "value": dict(op.value),
                "content": texts[id(op)],
                "embedding": vector_of.get(id(op)),
            }
            if op.ttl is not None:
                item["ttl"] = op.ttl
            if op.index is False:
                item["index"] = False
            items.append(item)
        try:
            fetch_all(
                conn, client_queries.PUT_ITEMS, {"subject": subject, "items": as_jsonb(items)}
            )
        except psycopg.Error as exc:
            if exc.sqlstate == PM_INJECTION and exc.diag.message_detail:
                refused = json.loads(exc.diag.message_detail)
                raise ValueError(
                    f"pgmem refused the value of {refused['key']!r}: "
                    f"prompt injection ({refused['rule']})"
                ) from exc
            raise

    def _get_many(self, conn: Connection, ops: list[GetOp]) -> list[Item | None]:
        """The items of ``ops``: one read per namespace (and refresh setting)."""
        found: dict[tuple[tuple[str, ...], str], Item] = {}
        groups: dict[tuple[tuple[str, ...], bool], list[str]] = {}
        for op in ops:
            groups.setdefault((op.namespace, op.refresh_ttl), []).append(op.key)
        for (namespace, refresh), keys in groups.items():
            for row in self._items(conn, namespace, keys=keys, refresh=refresh):
                found[(namespace, row["key"])] = _item(row, namespace)
        return [found.get((op.namespace, op.key)) for op in ops]

    def _items(
        self,
        conn: Connection,
        namespace: tuple[str, ...],
        *,
        keys: list[str] | None = None,
        memory_ids: list[int] | None = None,
        limit: int | None = None,
        offset: int = 0,
        refresh: bool = False,
    ) -> list[Row]:
        params = {
            "subject": subject_of(namespace),
            "keys": keys,
            "memory_ids": memory_ids,
            "limit": limit,
            "offset": offset,
            "refresh": refresh,
        }
        return fetch_all(conn, client_queries.GET_ITEMS, params)

    # ------------------------------------------------------------- search

    def _subjects(self, conn: Connection, prefix: tuple[str, ...]) -> list[str]:
        params = {"prefix": subject_of(prefix) if prefix else None}
        return [row["subject"] for row in fetch_all(conn, queries.ITEM_NAMESPACES, params)]

    def _search(self, conn: Connection, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        found: list[tuple[float, datetime, int, SearchItem]] = []
        for subject in self._subjects(conn, op.namespace_prefix):
            namespace = namespace_of(subject)
            scores: dict[int, float] = {}
            if op.query:
                # A query is words to rank by, not a time to recall within: "what
                # happened in 1999?" must not become a valid-time window. A filter
                # thins the ranked hits out: then as many as recall ranks.
                k = RECALL_K_MAX if op.filter else min(wanted, RECALL_K_MAX)
                hits = self.memory.search(
                    op.query, subject, k, filters=ITEMS_ONLY, parse_time=False, conn=conn
                )
                scores = {hit["memory_id"]: hit["score"] for hit in hits}
                rows = (
                    self._items(conn, namespace, memory_ids=list(scores), refresh=op.refresh_ttl)
                    if scores
                    else []
                )
            else:
                limit = None if op.filter else wanted
                rows = self._items(conn, namespace, limit=limit, refresh=op.refresh_ttl)
            for row in rows:
                score = scores.get(row["memory_id"])
                item = _item(row, namespace, score=score)
                if op.filter and not _matches(item.value, op.filter):
                    continue
                found.append((score or 0.0, item.updated_at, row["memory_id"], item))
        # Best score first; without a query the most recently updated first, as
        # LangGraph's PostgresStore lists them.
        found.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
        return [t[3] for t in found[op.offset : op.offset + op.limit]]

    def _list_namespaces(self, conn: Connection, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for subject in self._subjects(conn, ()):
            namespace = namespace_of(subject)
            if all(_ns_matches(namespace, c) for c in op.match_conditions or ()):
                depth = op.max_depth if op.max_depth is not None else len(namespace)
                namespaces.add(namespace[:depth])
        return sorted(namespaces)[op.offset : op.offset + op.limit]


def _by_subject(ops: Iterable[PutOp]) -> dict[str, list[PutOp]]:
    groups: dict[str, list[PutOp]] = {}
    for op in ops:
        groups.setdefault(subject_of(op.namespace), []).append(op)
    return groups


# ----------------------------------------------------------------- helpers


def _item(row: Row, namespace: tuple[str, ...], *, score: float | None = None) -> SearchItem:
    return SearchItem(
        namespace, row["key"], row["value"], row["created_at"], row["updated_at"], score
    )


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
