"""The Python client: :class:`Memory`, a thin layer over the ``pgmem.*`` SQL functions.

Python does what the database cannot: it turns conversations into facts
(:mod:`pgmem.extract`: rules, plus an LLM when one is configured) and texts into vectors
(:mod:`pgmem.embed`). Everything else — deduplication, contradictions, scoring, decay,
tenant isolation, history — happens in SQL, called through the named statements of
:mod:`pgmem.queries`::

    from pgmem import Memory

    with Memory(tenant="acme") as memory:
        memory.add("I moved to Berlin and I prefer dark mode", user_id="alice")
        for hit in memory.search("where does she live?", user_id="alice"):
            print(hit["content"], hit["score"], hit["relevance"], hit["recency"])

Connections. ``Memory(dsn)`` keeps a pool of its own connections (``dsn`` or
``PGMEM_DSN``, else the embedded server; :mod:`psycopg_pool`, at most ``pool_size``,
opened on first use), so threads may share one client. Each pooled connection has the
client's tenant bound once, for its session; a call is then one statement in its own
transaction: one round trip. (On a Citus coordinator the session's binding does not
reach the shards: there every call binds in its own transaction, as below.)
``Memory(pool=app_pool)`` draws from the caller's :class:`~psycopg_pool.ConnectionPool`
instead (its connections may serve other tenants: each call runs in a transaction that
binds the tenant first). ``Memory(conn=app_conn)``,
or ``conn=`` on any call, uses the caller's psycopg connection: inside a transaction the
caller has open, the call runs in a savepoint of it, so the memory write commits or rolls
back with the app's own writes.

Tenants. A per-tenant login role is bound to its tenant already: ``tenant`` may be
omitted (if given, it must be that tenant). A ``pgmem_service`` member (or a superuser)
has ``pgmem.bind_tenant(tenant)`` called once per pooled connection of its own, and at
the start of every transaction on a caller's connection or pool.

Errors from the database come through as :mod:`psycopg` errors whose message and hint
say what to fix; an unknown memory id raises :class:`MemoryNotFound`, and a role that
cannot act for the requested tenant raises :class:`TenantError`.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, TypeAlias

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pgmem import ingest, queries, timeexpr
from pgmem.db import resolve_dsn
from pgmem.embed import Embedder, degraded, embedder_from_env
from pgmem.extract import KINDS, LLMExtractor, Mode, as_messages
from pgmem.queries import layers as layer_queries
from pgmem.rows import Connection, PromptText, Results, Row, Rows, fetch_all, fetch_one
from pgmem.session import Session
from pgmem.task import Task
from pgmem.task import resume_task as _resume_task
from pgmem.task import start_task as _start_task

__all__ = [
    "AddResult",
    "Connection",
    "ImportRecordError",
    "Memory",
    "MemoryNotFound",
    "Messages",
    "PromptText",
    "Results",
    "Row",
    "TenantError",
]

AddResult: TypeAlias = Results
Messages: TypeAlias = str | Sequence[Mapping[str, Any] | str]
# Records of an import on their way to one remember_many call: (position, item, pinned).
_Batch: TypeAlias = list[tuple[int, Row, bool]]
# Store items to import: (record position, pgmem.put_items item).
_Items: TypeAlias = list[tuple[int, Row]]

# Connections a client keeps open by default: enough for a few threads sharing it.
POOL_SIZE = 4

# SQLSTATEs meaning "this tenant has no memory with that id": the write path's
# (10_input.sql, 16_edits.sql), lifecycle's restore (30_lifecycle.sql) and the
# worker functions' (65_embed_merge.sql).
NOT_FOUND_SQLSTATES = frozenset({"PM022", "PM030", "PM060"})

# Bytes of the largest text of an add from which its size is checked against the
# tenant's max_content_bytes before it is embedded.
EARLY_SIZE_CHECK = 4096

# Memories per pgmem.remember_many call when importing: large enough that the
# set-based insert of plainly new items dominates, small enough that a progress bar
# moves and a bad record is reported close to where it is.
IMPORT_BATCH = 256
# The change stream's first position (pgmem.changes).
START = "0/0"
# The source of a store item's memory (pgmem.put_items, the LangGraph store).
STORE = "store"
# Rows fetched per round trip while exporting (server-side cursor).
EXPORT_FETCH = 500
# How pgmem.remember_many names an item in its errors: p_items[3].content.
_BATCH_ITEM = re.compile(r"p_items\[(\d+)\]\.?")


# A pooled connection whose session has no binding yet (None is "no model").
_UNBOUND = object()


class MemoryNotFound(LookupError):
    """The bound tenant has no memory with this id (never existed, purged, or another tenant's)."""

    def __init__(self, memory_id: int, message: str | None = None) -> None:
        super().__init__(message or f"unknown memory id: {memory_id}")
        self.memory_id = memory_id


class TenantError(RuntimeError):
    """The connection's role cannot act for the tenant the client was asked to use."""


class ImportRecordError(ValueError):
    """A record handed to :meth:`Memory.import_memories` cannot be imported."""

    def __init__(self, position: int, message: str, *, last: int | None = None) -> None:
        where = f"records {position}-{last}" if last is not None else f"record {position}"
        super().__init__(f"{where}: {message}")
        self.position = position  # 1-based, in the order the records were given
        self.last = last  # for an error the database reports for a whole batch
        self.reason = message


class Memory:
    """Long-term memory of one tenant, stored and ranked by PostgreSQL.

    :param dsn: where the database is; default ``PGMEM_DSN``, else the embedded server.
    :param tenant: tenant to act for; optional for a per-tenant login role.
    :param conn: a psycopg connection of the caller's to use instead of opening any.
    :param pool: a :class:`~psycopg_pool.ConnectionPool` of the caller's to draw from
        (autocommit connections) instead of opening one.
    :param pool_size: the most connections the client's own pool opens.
    :param embedder: an :class:`~pgmem.embed.Embedder`; default from the environment
        (:func:`~pgmem.embed.embedder_from_env`), loaded on first use. ``False``
        stores and searches text only (the worker embeds stored memories later).
    :param llm: an :class:`~pgmem.extract.LLMExtractor` for :meth:`add`; default
        :meth:`LLMExtractor.from_env` (none unless an endpoint is configured).
        ``False`` keeps extraction with the rules.
    :param extract_mode: ``hybrid``, ``llm`` or ``rules``; see :func:`pgmem.extract.extract`.
    :param episode_roles: whose turns :meth:`add` keeps as episodes besides the user's
        (``assistant``, ``tool``); default the user's alone: an assistant's words are
        context, kept in the session window.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        tenant: str | None = None,
        conn: Connection | None = None,
        pool: ConnectionPool[Any] | None = None,
        pool_size: int = POOL_SIZE,
        embedder: Embedder | Literal[False] | None = None,
        llm: LLMExtractor | Literal[False] | None = None,
        extract_mode: Mode | None = None,
        episode_roles: Iterable[str] = (),
    ) -> None:
        if sum(x is not None for x in (dsn, conn, pool)) > 1:
            raise ValueError("pass one of dsn, conn and pool")
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self.tenant = tenant
        self.episode_roles = ingest.episode_roles(episode_roles)
        self._dsn = dsn
        self._conn = conn
        self._pool = pool
        self._pool_size = pool_size
        self._own_pool: ConnectionPool[Any] | None = None
        # Connections of the own pool whose session has the tenant bound already (with
        # the embedding model it declared), and whether that binding reaches every
        # statement (not on Citus: BIND_TENANT_SESSION).
        self._bound: weakref.WeakKeyDictionary[Connection, str | None] = weakref.WeakKeyDictionary()
        self._session_wide = True
        self._embedder_arg = embedder
        self._embedder: Embedder | None = None
        self._llm_arg = llm
        self._llm: LLMExtractor | None = None
        self._llm_loaded = False
        self.extract_mode = extract_mode

    def __repr__(self) -> str:
        if self._conn is not None:
            where = "caller's connection"
        else:
            where = "caller's pool" if self._pool is not None else "own pool"
        return f"Memory(tenant={self.tenant!r}, {where})"

    # ------------------------------------------------------------ connections

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the pool this client opened (never the caller's connection or pool)."""
        if self._own_pool is not None:
            self._own_pool.close()
            self._own_pool = None

    def _pool_of_own(self) -> ConnectionPool[Any]:
        if self._own_pool is None:
            # Autocommit: a call is one statement, its own transaction; a call of
            # several brackets itself in BEGIN/COMMIT (transaction()), and no
            # connection sits idle inside a transaction between calls.
            conninfo = resolve_dsn(self._dsn)
            kwargs: dict[str, Any] = {"autocommit": True, "application_name": "pgmem client"}
            # One direct connection first: a server that cannot be reached fails now
            # with its own error, not as a pool timeout 30 seconds later.
            psycopg.connect(conninfo, **kwargs).close()
            self._own_pool = ConnectionPool(
                conninfo, min_size=1, max_size=self._pool_size, kwargs=kwargs, open=True
            )
        return self._own_pool

    @contextmanager
    def _pooled(self) -> Iterator[Connection]:
        """A connection of the client's own pool, its session bound to the tenant."""
        with self._pool_of_own().connection() as conn:
            model = self._model()
            if self._bound.get(conn, _UNBOUND) != model:
                # First use, or the embedder (and its model) came after the binding.
                row = self._bind_tenant(conn, session=True)
                if row is not None:
                    self._session_wide = bool(row["session_wide"])
                self._bound[conn] = model
            yield conn

    @contextmanager
    def _call(self, conn: Connection | None = None) -> Iterator[Connection]:
        """Where a call of one statement runs: on the own pool, the pooled connection as
        it is (autocommit, the tenant bound on the session: one round trip); otherwise
        in a transaction that binds the tenant first (:meth:`transaction`)."""
        if conn is None and self._conn is None and self._pool is None:
            with self._pooled() as pooled:
                if self._session_wide:
                    yield pooled
                    return
            # On Citus the session's binding does not reach the shards: bind per call.
        with self.transaction(conn) as target:
            yield target

    @contextmanager
    def transaction(self, conn: Connection | None = None) -> Iterator[Connection]:
        """A transaction (a savepoint inside the caller's) with the tenant bound.

        Statements of your own run in it see exactly this tenant's rows::

            with memory.transaction() as conn:
                conn.execute("select count(*) from pgmem.memories")
        """
        if conn is not None or self._conn is not None:
            target = conn if conn is not None else self._conn
            assert target is not None
            with target.transaction():
                self._bind_tenant(target)
                yield target
        elif self._pool is not None:
            with self._pool.connection() as pooled, pooled.transaction():
                self._bind_tenant(pooled)
                yield pooled
        else:
            with self._pooled() as pooled, pooled.transaction():
                if not self._session_wide:
                    self._bind_tenant(pooled)
                yield pooled

    def _bind_tenant(self, conn: Connection, *, session: bool = False) -> Row | None:
        # Once the embedder exists (it is made before the first vector is computed),
        # every transaction, or pooled session, declares its model: the database
        # refuses vectors of a model other than the tenant's (PM025).
        model = self._model()
        if self.tenant is None:
            # A login role's binding, or PM001 from the first function that needs one.
            if model is not None:
                fetch_one(conn, queries.USE_EMBEDDING_MODEL, {"model": model, "local": not session})
            return None
        if session:
            row = fetch_one(
                conn, queries.BIND_TENANT_SESSION, {"tenant": self.tenant, "model": model}
            )
        elif model is None:
            row = fetch_one(conn, queries.BIND_TENANT, {"tenant": self.tenant})
        else:
            row = fetch_one(
                conn, queries.BIND_TENANT_MODEL, {"tenant": self.tenant, "model": model}
            )
        if row["tenant"] != self.tenant:
            raise TenantError(
                f"this connection's role acts for tenant {row['tenant']!r}, not {self.tenant!r}; "
                "connect as that tenant's login role, or as a pgmem_service member"
            )
        return row

    # -------------------------------------------------------- models (lazy)

    def _model(self) -> str | None:
        """The embedding model this client's vectors come from, once its embedder exists."""
        return self._embedder.model if self._embedder is not None else None

    def _get_embedder(self) -> Embedder | None:
        if self._embedder_arg is False:
            return None
        if self._embedder is None:
            self._embedder = self._embedder_arg or embedder_from_env()
        return self._embedder

    def _get_llm(self) -> LLMExtractor | None:
        if self._llm_arg is False:
            return None
        if self._llm_arg is not None:
            return self._llm_arg
        if not self._llm_loaded:
            self._llm = LLMExtractor.from_env()
            self._llm_loaded = True
        return self._llm

    def _check_sizes(self, texts: Iterable[str], conn: Connection | None = None) -> None:
        """PM012 for a text over the tenant's max_content_bytes, before it is embedded
        (a large text takes the embedder seconds). Texts of a few KB are left to the
        write's own check: asking for every one would cost each write a statement."""
        largest = max((len(t.encode("utf-8")) for t in texts), default=0)
        if largest > EARLY_SIZE_CHECK:
            with self._call(conn) as c:
                fetch_all(c, queries.CHECK_CONTENT_SIZE, {"bytes": largest})

    def _vectors(self, texts: Sequence[str]) -> tuple[list[list[float] | None], str | None]:
        """Passage vectors of ``texts`` (what is stored), and why there are none when the
        embedder fails: then every vector is None, and the worker's embed pass fills
        them in later (text is never held back for a vector)."""
        embedder = self._get_embedder()
        if embedder is None or not texts:
            return [None] * len(texts), None
        try:
            return list(embedder.embed(list(texts))), None
        except Exception as exc:
            return [None] * len(texts), degraded(exc, "stored without vectors")

    def _query_vector(self, query: str | None) -> tuple[list[float] | None, str | None]:
        """The query's vector, or None and why when the embedder fails: the read then
        ranks by full text alone rather than failing."""
        embedder = self._get_embedder()
        if embedder is None or query is None or not query.strip():
            return None, None
        try:
            return embedder.embed_query(query), None
        except Exception as exc:
            return None, degraded(exc, "answered from full text alone")

    # ----------------------------------------------------------------- write

    def add(
        self,
        messages: Messages,
        user_id: str,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        enqueue: bool = False,
        kind: str | None = None,
        importance: float | None = None,
        occurred_at: datetime | None = None,
        confidence: float | None = None,
        expires_at: datetime | None = None,
        check_conflicts: bool = True,
        conn: Connection | None = None,
    ) -> AddResult:
        """Remember what a conversation (or a text) says about ``user_id``.

        ``infer=True`` extracts facts (rules; hybrid with an LLM when configured),
        embeds them and hands them to ``pgmem.remember_many``, which decides per fact:
        inserted, reinforced, superseded, deduplicated, merge_pending or rejected.
        ``enqueue=True`` only queues the turn (``pgmem.enqueue``) for the worker.
        ``infer=False`` stores the text (or each non-system message) as it is, with
        ``kind`` (default semantic) and ``importance`` (default: the tenant's): a record
        like an episode (source ``turn``), which only an exact re-send matches.
        ``confidence`` (0..1) and ``expires_at`` apply to every fact; left out, the
        database uses the source's default confidence and the kind's default TTL.
        ``check_conflicts=False`` (an explicit key-value write, as the LangGraph store
        makes) skips the contradiction check, so no other fact is retired by it.

        With ``infer=True`` each user turn is kept as written too, as an episode
        (source ``turn``, ``"episode": True`` in its result) that its facts are linked
        ``derived_from``; dedup, merge and supersession act on facts, never on it.

        Returns one dict per item stored or refused: ``action``, ``memory_id`` (for
        reinforced and deduplicated, the memory that already said it), ``related_id``,
        ``similarity``, ``content`` (the fact as extracted; what is stored has secrets
        redacted), ``kind`` (and ``reason`` for rejected text); then one
        ``{"action": "skipped", "reason": …}`` per message nothing was stored for (small
        talk, empty, a system turn); with ``enqueue=True`` one
        ``{"action": "queued", "inbox_id": …}``. When the embedder fails, the facts are
        stored without vectors (full text finds them; the worker's embed pass embeds
        them later) and the result is ``degraded``, as :meth:`search`'s.
        """
        meta = dict(metadata or {})
        if enqueue:
            if not infer:
                raise ValueError(
                    "enqueue=True hands the turn to the worker, which always extracts facts; "
                    "store text as it is with infer=False and enqueue=False"
                )
            if not check_conflicts:
                raise ValueError("the worker always checks contradictions; check_conflicts=False")
            with self._call(conn) as c:
                row = fetch_one(
                    c,
                    queries.ENQUEUE,
                    {
                        "subject": user_id,
                        "messages": ingest.as_jsonb(as_messages(messages)),
                        "session_id": session_id,
                        "agent_id": agent_id,
                        "metadata": ingest.as_jsonb(meta),
                        "occurred_at": occurred_at,
                        "confidence": confidence,
                        "expires_at": expires_at,
                    },
                )
            return Results([{"action": "queued", "inbox_id": row["inbox_id"]}])

        if infer:
            if kind is not None or importance is not None:
                raise ValueError(
                    "kind and importance apply to infer=False; extraction sets its own"
                )
            planned, _ = ingest.plan(
                messages,
                llm=self._get_llm(),
                mode=self.extract_mode,
                episode_roles=self.episode_roles,
            )
        else:
            planned = ingest.plan_as_is(messages, kind or "semantic", importance)
        skipped = ingest.unstored(messages, planned, self.episode_roles)
        if not planned:
            return Results(skipped)
        # Relative dates resolved, and a text over the tenant's size limit refused,
        # before anything is embedded or stored (a large text takes the embedder
        # seconds). Texts of a few KB are left to the write's own check: asking
        # for every one would cost each add a statement.
        with self.transaction(conn) as c:
            self._check_sizes(ingest.stored_texts(planned), c)
            planned = ingest.resolve_times_of(c, user_id, planned, occurred_at)
        # Models run before the transaction opens: no lock waits on them.
        vectors, degraded = self._vectors(ingest.stored_texts(planned))
        batch = ingest.items(
            planned,
            ingest.spread(planned, vectors),
            session_id=session_id,
            agent_id=agent_id,
            metadata=meta,
            valid_from=occurred_at,
            confidence=confidence,
            expires_at=expires_at,
            check_conflicts=check_conflicts,
        )
        with self._call(conn) as c:
            rows = ingest.remember(c, user_id, batch)
        results = Results(degraded_reason=degraded)
        for row in rows:
            p = planned[row.pop("item") - 1]
            row.update(content=p.content, kind=p.kind)
            if p.rejected is not None:
                row["reason"] = p.rejected
            elif row["action"] == "rejected":
                # Refused by the safety rules in SQL: which one, for the caller.
                with self._call(conn) as c:
                    rule = fetch_one(c, queries.INJECTION_RULE, {"content": p.content})["rule"]
                row["reason"] = f"prompt injection ({rule})" if rule else "prompt injection"
            if p.source == ingest.TURN:
                row["episode"] = True
            results.append(row)
        results += skipped
        return results

    def update(
        self,
        memory_id: int,
        content: str | None = None,
        *,
        importance: float | None = None,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        triple: tuple[str, str, str] | None = None,
        conn: Connection | None = None,
    ) -> Row:
        """Edit a memory in place (``pgmem.update_memory``) and return it.

        New content is embedded again; ``metadata`` is merged into the stored object;
        new content without a new ``triple`` drops the old triple. The change is kept
        in :meth:`history` as an ``update`` event with the old and new content.
        """
        # Without a vector (an embedder outage) the old one is cleared for the worker.
        embedding = self._vectors([content])[0][0] if content is not None else None
        subject, predicate, obj = triple or (None, None, None)
        params = {
            "memory_id": memory_id,
            "content": content,
            "embedding": embedding,
            "importance": importance,
            "kind": kind,
            "metadata": ingest.as_jsonb(dict(metadata)) if metadata is not None else None,
            "triple_subject": subject,
            "triple_predicate": predicate,
            "triple_object": obj,
        }
        with _not_found(memory_id), self._call(conn) as c:
            return fetch_one(c, queries.UPDATE_MEMORY, params)

    def delete(self, memory_id: int, *, conn: Connection | None = None) -> bool:
        """Forget a memory (``pgmem.forget``: soft delete, history kept).

        False when it was deleted already; :class:`MemoryNotFound` for an unknown id.
        """
        with _not_found(memory_id), self._call(conn) as c:
            return bool(fetch_one(c, queries.FORGET, {"memory_id": memory_id})["changed"])

    forget = delete

    def pin(self, memory_id: int, *, conn: Connection | None = None) -> bool:
        """Pin a memory: it never decays, is never archived or evicted. False if it was."""
        with _not_found(memory_id), self._call(conn) as c:
            return bool(
                fetch_one(c, queries.PIN, {"memory_id": memory_id, "pinned": True})["changed"]
            )

    def keep(self, memory_id: int, kept: bool = True, *, conn: Connection | None = None) -> bool:
        """Keep a memory as application state (``kept=False`` lets it go): it never
        decays, is never archived, expired or evicted, and is not in the core profile
        (``pgmem.keep``). False if nothing changed."""
        with _not_found(memory_id), self._call(conn) as c:
            return bool(
                fetch_one(c, queries.KEEP, {"memory_id": memory_id, "kept": kept})["changed"]
            )

    def unpin(self, memory_id: int, *, conn: Connection | None = None) -> bool:
        """Unpin a memory. False if it was not pinned."""
        with _not_found(memory_id), self._call(conn) as c:
            return bool(
                fetch_one(c, queries.PIN, {"memory_id": memory_id, "pinned": False})["changed"]
            )

    def profile(self, user_id: str, *, conn: Connection | None = None) -> Rows:
        """``user_id``'s core profile (``pgmem.profile``): the facts every prompt and
        context block shows first, whatever the query. Each row says why it is there
        (``reason``: pinned, health, identity, instruction or preference)."""
        with self._call(conn) as c:
            return fetch_all(c, queries.PROFILE, {"subject": user_id})

    def add_to_profile(
        self, text: str, user_id: str, *, kind: str = "semantic", conn: Connection | None = None
    ) -> Row:
        """Store ``text`` as it is and put it in ``user_id``'s core profile (pinned), as
        an agent edits its core memory. Returns the stored row's ``action`` and
        ``memory_id`` (an exact re-send names the memory that already said it).
        ValueError when the text is refused (a prompt injection, nothing to store)."""
        with self.transaction(conn) as c:
            results = self.add(text, user_id, infer=False, kind=kind, conn=c)
            stored = [r for r in results if r.get("memory_id") is not None]
            if not stored:
                reasons = ", ".join(str(r.get("reason") or r["action"]) for r in results)
                raise ValueError(f"nothing stored for the profile: {reasons or 'empty text'}")
            self.set_profile(int(stored[0]["memory_id"]), conn=c)
        return stored[0]

    def set_profile(
        self, memory_id: int, member: bool = True, *, conn: Connection | None = None
    ) -> bool:
        """Put a memory in its user's core profile (pin it), or with ``member=False``
        take it out (unpin it; the engine will not select it again). False if nothing
        changed."""
        with _not_found(memory_id), self._call(conn) as c:
            params = {"memory_id": memory_id, "member": member}
            return bool(fetch_one(c, queries.SET_PROFILE, params)["changed"])

    def erase_user(self, user_id: str, *, conn: Connection | None = None) -> int:
        """Remove everything about ``user_id`` for good (``pgmem.erase_subject``).

        Memories, links, history and queued jobs go; one tombstone event without
        subject or content stays. Returns how many memories were removed.
        """
        with self._call(conn) as c:
            return int(fetch_one(c, queries.ERASE_SUBJECT, {"subject": user_id})["memories"])

    # ------------------------------------------------------------------ read

    def search(
        self,
        query: str,
        user_id: str,
        k: int = 10,
        *,
        kinds: str | Sequence[str] | None = None,
        filters: Mapping[str, Any] | None = None,
        hops: int = 0,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
        min_score: float = 0.0,
        diversity: float | None = None,
        reinforce: bool = True,
        agent_id: str | None = None,
        shared_subjects: Sequence[str] | None = None,
        parse_time: bool = True,
        now: datetime | None = None,
        conn: Connection | None = None,
    ) -> Results:
        """The ``k`` memories of ``user_id`` that best answer ``query`` (``pgmem.recall``).

        Each row has the memory (``memory_id``, ``content``, ``kind``…) and its score
        parts: ``score``, ``relevance``, ``similarity``, ``text_match``,
        ``importance``, ``recency``, ``access_boost``; ``hops`` > 0 adds linked
        memories (``hops``, ``via_memory_id``, ``via_link``). ``filters`` must be
        contained in a memory's metadata; ``diversity`` is the MMR λ (0..1);
        ``as_of`` answers as of a past time. Returned memories are reinforced
        unless ``reinforce=False``.

        Scope: ``agent_id`` keeps, of ``user_id``'s memories, what that agent wrote;
        ``shared_subjects`` (a team's, a domain's) are searched with them, whoever
        wrote them, each row's ``subject`` saying whose it is. Time: with neither
        ``since`` nor ``until`` given, a time the query names ("last week", "上周",
        "in May 2023") sets them (:meth:`time_window`), unless ``parse_time=False``;
        ``now`` (default: the database's) is the moment "yesterday" and recency are
        measured from.

        When the embedder fails (an endpoint down, an error), the rows are ranked by
        full text alone and the result says so: ``degraded`` is True and
        ``degraded_reason`` names the error, also logged as a warning on ``pgmem``.
        """
        embedding, degraded = self._query_vector(query)
        with self._call(conn) as c:
            if parse_time and since is None and until is None:
                since, until = self._time_window(c, query, user_id, now) or (None, None)
            params = {
                "subject": user_id,
                "query": query,
                "embedding": embedding,
                "k": k,
                "kinds": _kinds(kinds),
                "session_id": session_id,
                "since": since,
                "until": until,
                "as_of": as_of,
                "metadata": ingest.as_jsonb(dict(filters)) if filters else None,
                "min_score": min_score,
                "mmr_lambda": diversity,
                "hops": hops,
                "reinforce": reinforce,
                "now": now,
                "agent_id": agent_id,
                "shared_subjects": list(shared_subjects) if shared_subjects is not None else None,
            }
            return Results(fetch_all(c, queries.RECALL, params), degraded_reason=degraded)

    def context(
        self,
        query: str,
        user_id: str,
        token_budget: int = 500,
        *,
        k: int = 50,
        kinds: str | Sequence[str] | None = None,
        session_id: str | None = None,
        as_of: datetime | None = None,
        min_score: float = 0.0,
        hops: int = 0,
        reinforce: bool = True,
        since: datetime | None = None,
        until: datetime | None = None,
        agent_id: str | None = None,
        shared_subjects: Sequence[str] | None = None,
        parse_time: bool = True,
        now: datetime | None = None,
        conn: Connection | None = None,
    ) -> PromptText:
        """A prompt block of what is known about ``user_id`` for ``query``
        (``pgmem.context``): sections by kind, dated lines, most relevant first,
        within ``token_budget`` (estimated) tokens. Empty when nothing fits.
        ``since``/``until``, ``parse_time``, ``now``, ``agent_id`` and
        ``shared_subjects`` as in :meth:`search`; ``degraded`` too, when the embedder
        failed and the block was built from full text alone."""
        embedding, degraded = self._query_vector(query)
        with self._call(conn) as c:
            if parse_time and since is None and until is None:
                since, until = self._time_window(c, query, user_id, now) or (None, None)
            params = {
                "subject": user_id,
                "query": query,
                "embedding": embedding,
                "token_budget": token_budget,
                "k": k,
                "kinds": _kinds(kinds),
                "session_id": session_id,
                "as_of": as_of,
                "min_score": min_score,
                "hops": hops,
                "reinforce": reinforce,
                "now": now,
                "since": since,
                "until": until,
                "agent_id": agent_id,
                "shared_subjects": list(shared_subjects) if shared_subjects is not None else None,
            }
            text = str(fetch_one(c, queries.CONTEXT, params)["context"] or "")
        return PromptText(text, degraded_reason=degraded)

    def time_window(
        self,
        query: str,
        user_id: str,
        *,
        now: datetime | None = None,
        conn: Connection | None = None,
    ) -> tuple[datetime, datetime] | None:
        """The ``[since, until)`` :meth:`search` and :meth:`context` use for a query that
        names a time, or None: the period it names (:func:`pgmem.timeexpr.period`, as of
        ``now`` in ``user_id``'s time zone), opened a week before and two weeks after,
        since a fact is often told some days after it happened (:func:`pgmem.timeexpr.widen`).
        """
        with self.transaction(conn) as c:
            return self._time_window(c, query, user_id, now)

    def _time_window(
        self, c: Connection, query: str, user_id: str, now: datetime | None
    ) -> tuple[datetime, datetime] | None:
        if not timeexpr.find(query, date.today()):  # no query for a query naming no time
            return None
        zone = timeexpr.time_zone(
            str(fetch_one(c, queries.TIME_ZONE, {"subject": user_id})["time_zone"])
        )
        return timeexpr.window(query, now or datetime.now(UTC), zone)

    def set_time_zone(
        self, user_id: str, time_zone: str | None, *, conn: Connection | None = None
    ) -> str:
        """Sets ``user_id``'s own time zone (an IANA name; None: the tenant's) for relative
        dates at write and times in queries (``pgmem.set_time_zone``); returns the zone
        in effect."""
        with self.transaction(conn) as c:
            row = fetch_one(c, queries.SET_TIME_ZONE, {"subject": user_id, "time_zone": time_zone})
            return str(row["time_zone"])

    def get(self, memory_id: int, *, conn: Connection | None = None) -> Row | None:
        """One memory of the bound tenant, whatever its status; None if there is none."""
        with self._call(conn) as c:
            rows = fetch_all(c, queries.GET_MEMORY, {"memory_id": memory_id})
        return rows[0] if rows else None

    def get_all(
        self,
        user_id: str | None = None,
        *,
        kinds: str | Sequence[str] | None = None,
        status: str | Sequence[str] | None = "active",
        session_id: str | None = None,
        agent_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
        conn: Connection | None = None,
    ) -> Rows:
        """Memories newest first: of ``user_id`` (default every subject), of the given
        ``status`` (``None``: every status), kinds, session, agent and metadata."""
        params = {
            "subject": user_id,
            "statuses": _kinds(status),
            "kinds": _kinds(kinds),
            "session_id": session_id,
            "agent_id": agent_id,
            "metadata": ingest.as_jsonb(dict(filters)) if filters else None,
            "limit": limit,
            "offset": offset,
        }
        with self._call(conn) as c:
            return fetch_all(c, queries.LIST_MEMORIES, params)

    list = get_all

    def history(self, memory_id: int, *, conn: Connection | None = None) -> Rows:
        """Every recorded change of a memory, oldest first: insert, reinforce, supersede,
        update, pin, delete… with actor, time, old and new content. Empty when the id
        has no history (history outlives a purged memory, not an erased subject)."""
        with self._call(conn) as c:
            return fetch_all(c, queries.HISTORY, {"memory_id": memory_id})

    def events(
        self, user_id: str, *, event: str | None = None, conn: Connection | None = None
    ) -> Rows:
        """Every recorded event about a user (one kind with ``event``), oldest first,
        including those tied to no memory, such as rejected prompt injections."""
        with self._call(conn) as c:
            return fetch_all(c, queries.SUBJECT_EVENTS, {"subject": user_id, "event": event})

    def entities(self, user_id: str, *, limit: int = 50, conn: Connection | None = None) -> Rows:
        """The named things of a user's facts, most named first, each with the facts
        (triples) that name them (``pgmem.entities``)."""
        with self._call(conn) as c:
            return fetch_all(c, queries.ENTITIES, {"subject": user_id, "limit": limit})

    def links(self, memory_id: int, *, conn: Connection | None = None) -> Rows:
        """A memory's typed links both ways, with the other memory's content and status
        (``pgmem.memory_links_of``)."""
        with self._call(conn) as c:
            return fetch_all(c, queries.MEMORY_LINKS, {"memory_id": memory_id})

    def changes(
        self,
        after: str = START,
        user_id: str | None = None,
        *,
        limit: int = 100,
        conn: Connection | None = None,
    ) -> Rows:
        """The tenant's memory events after stream position ``after`` (:data:`START`:
        from the beginning), of one user or all, oldest first, each with its
        ``stream_position``: pass the last one back for the next page
        (``pgmem.changes``). No event is missed or read twice."""
        params = {"after": after, "subject": user_id, "limit": limit}
        with self._call(conn) as c:
            return fetch_all(c, queries.CHANGES, params)

    def watch(
        self,
        user_id: str | None = None,
        *,
        after: str | None = START,
        poll: float = 5.0,
        limit: int = 100,
    ) -> Iterator[Row]:
        """Follow the change stream: every event after ``after`` (None: from now on) as
        it is recorded, for ever (stop by breaking out). One connection is held for it,
        listening on the tenant's channel (``pgmem.change_channel``); it reads the new
        events when notified, and every ``poll`` seconds in any case (on Citus there
        are no notifications)."""
        with self._dedicated() as conn:
            with self.transaction(conn) as c:
                channel = fetch_one(c, queries.CHANGE_CHANNEL, {})["channel"]
                if after is None:
                    after = fetch_one(c, queries.CHANGE_POSITION, {})["position"]
            conn.execute(queries.LISTEN.format(sql.Identifier(channel)))
            conn.commit()
            while True:
                rows = self.changes(after, user_id, limit=limit, conn=conn)
                conn.commit()
                for row in rows:
                    after = row["stream_position"]
                    yield row
                if len(rows) < limit:
                    # Woken by a notification, or after poll seconds.
                    for _ in conn.notifies(timeout=poll, stop_after=1):
                        pass

    @contextmanager
    def _dedicated(self) -> Iterator[Connection]:
        """A connection held for a long call: the caller's, or one of the pool's."""
        if self._conn is not None:
            yield self._conn
        elif self._pool is not None:
            with self._pool.connection() as pooled:
                yield pooled
        else:
            with self._pooled() as pooled:
                yield pooled

    def stats(
        self, user_id: str | None = None, *, top: int = 20, conn: Connection | None = None
    ) -> Row:
        """What the DBA views say about the bound tenant (or one subject):
        ``memories`` (pgmem.memory_stats per kind and status), ``backlog``
        (pgmem.archive_backlog: what archive and purge would take next) and
        ``capacity`` (pgmem.capacity_usage: the ``top`` fullest subjects)."""
        params = {"subject": user_id, "limit": top}
        with self.transaction(conn) as c:
            backlog = fetch_all(c, queries.ARCHIVE_BACKLOG, {})
            return {
                "memories": fetch_all(c, queries.MEMORY_STATS, params),
                "backlog": backlog[0] if backlog else None,
                "capacity": fetch_all(c, queries.CAPACITY_USAGE, params),
            }

    # ------------------------------------------------------- embedding model

    def reembed(
        self, model: str | None = None, *, batch: int = 64, conn: Connection | None = None
    ) -> int:
        """Move the tenant's vectors to ``model`` (default: this client's embedder's):
        ``pgmem.start_reembed`` queues worker jobs; a worker running that model embeds
        and stages the new vectors, and the last job switches them all in with the
        tenant's model. Returns the jobs queued (0: nothing stored, switched at once)."""
        if model is None:
            embedder = self._get_embedder()
            if embedder is None:
                raise ValueError("reembed needs a model name or an embedder")
            model = embedder.model
        with self.transaction(conn) as c:
            return int(
                fetch_one(c, queries.START_REEMBED, {"model": model, "batch": batch})["jobs"]
            )

    def reembed_status(self, *, conn: Connection | None = None) -> Row:
        """``pgmem.reembed_status()``: the tenant's model, a running re-embed's target
        model, memories with a vector, vectors staged, pending and failed jobs."""
        with self.transaction(conn) as c:
            return fetch_one(c, queries.REEMBED_STATUS, {})

    def cancel_reembed(self, *, conn: Connection | None = None) -> bool:
        """Stop a running re-embed (the tenant keeps its model); False when none ran."""
        with self.transaction(conn) as c:
            return bool(fetch_one(c, queries.CANCEL_REEMBED, {})["cancelled"])

    # ------------------------------------------ short-term and working memory

    def session(self, session_id: str, user_id: str) -> Session:
        """The conversation ``session_id`` about ``user_id``: append turns, read the
        window and the rolling summary, assemble the prompt (:class:`pgmem.session.Session`)."""
        return Session(self, session_id, user_id)

    def start_task(
        self,
        user_id: str,
        goal: str,
        plan: Sequence[str],
        *,
        session_id: str | None = None,
        variables: Mapping[str, Any] | None = None,
        status: str = "running",
        max_retries: int | None = None,
        ttl: timedelta | None = None,
        conn: Connection | None = None,
    ) -> Task:
        """Start a task (``pgmem.start_task``): goal and plan first, steps recorded as
        they complete (:class:`pgmem.task.Task`). Retries and expiry default to the
        tenant's ``task_max_retries`` and ``task_ttl``."""
        return _start_task(
            self,
            user_id,
            goal,
            plan,
            session_id=session_id,
            variables=variables,
            status=status,
            max_retries=max_retries,
            ttl=ttl,
            conn=conn,
        )

    def task(self, task_id: int) -> Task:
        """A handle on task ``task_id`` (no query until it is used)."""
        return Task(self, task_id)

    def resume_task(
        self, user_id: str, session_id: str | None = None, *, conn: Connection | None = None
    ) -> Task | None:
        """The latest unfinished task of ``user_id``'s session (``pgmem.resume_task``),
        or None: what an agent that crashed continues."""
        return _resume_task(self, user_id, session_id, conn=conn)

    def sessions(
        self, user_id: str | None = None, *, limit: int = 50, conn: Connection | None = None
    ) -> Rows:
        """Sessions of ``user_id`` (default every subject), most recently active first."""
        with self._call(conn) as c:
            return fetch_all(c, layer_queries.LIST_SESSIONS, {"subject": user_id, "limit": limit})

    def tasks(
        self,
        user_id: str | None = None,
        *,
        status: str | Sequence[str] | None = None,
        limit: int = 50,
        conn: Connection | None = None,
    ) -> Rows:
        """Tasks of ``user_id`` (default every subject), newest first, of ``status``."""
        params = {"subject": user_id, "statuses": _kinds(status), "limit": limit}
        with self._call(conn) as c:
            return fetch_all(c, layer_queries.LIST_TASKS, params)

    # -------------------------------------------------------- export / import

    def count_export(
        self,
        user_id: str | None = None,
        *,
        status: str | Sequence[str] | None = None,
        conn: Connection | None = None,
    ) -> int:
        """How many memories :meth:`export` would yield with the same arguments."""
        with self._call(conn) as c:
            params = {"subject": user_id, "statuses": _kinds(status)}
            return int(fetch_one(c, queries.COUNT_EXPORT, params)["memories"])

    def export(
        self,
        user_id: str | None = None,
        *,
        status: str | Sequence[str] | None = None,
        conn: Connection | None = None,
    ) -> Iterator[Row]:
        """Every memory of the tenant (or of ``user_id``) in id order, with embedding,
        status, triple, timestamps and metadata, read from one snapshot through a
        server-side cursor. ``status`` limits it (default: every status)."""
        # One statement, one snapshot: pages fetched later still see the same rows.
        params = {"subject": user_id, "statuses": _kinds(status)}
        with (
            self.transaction(conn) as c,
            c.cursor(name="pgmem_export", row_factory=dict_row) as cur,
        ):
            cur.itersize = EXPORT_FETCH
            cur.execute(queries.EXPORT_MEMORIES, params)
            yield from cur

    def import_memories(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        reembed: bool = False,
        progress: Callable[[int], None] | None = None,
        conn: Connection | None = None,
    ) -> dict[str, int]:
        """Remember exported records (see :meth:`export`) in this tenant, all or nothing.

        Each record goes through ``pgmem.remember_many`` with its subject (or
        ``user_id``), content, kind, importance, triple, session, agent, metadata and
        valid_from, source ``import``; a pinned record is pinned again. Only active
        records are imported; the others are counted as ``skipped``. A record's
        embedding is kept when it has the tenant's dimension, otherwise (or with
        ``reembed``) the content is embedded again. ``progress`` is called with the
        number of records handled after each batch. Returns counts per action.
        """
        counts: dict[str, int] = {}
        with self.transaction(conn) as c:
            dims = fetch_one(c, queries.TENANT_DIMS, {})["embedding_dims"]
            batch: _Batch = []
            position = 0
            items: dict[str, _Items] = {}  # store items, per subject
            for position, record in enumerate(records, start=1):
                if isinstance(record, Mapping) and record.get("source") == STORE:
                    if record.get("status", "active") == "active":
                        subject, kept = _store_item(position, record, user_id, dims, not reembed)
                        items.setdefault(subject, []).append((position, kept))
                    else:
                        counts["skipped"] = counts.get("skipped", 0) + 1
                    continue
                item, pinned = _import_item(position, record, user_id, dims, keep=not reembed)
                if item is None:
                    counts["skipped"] = counts.get("skipped", 0) + 1
                else:
                    batch.append((position, item, pinned))
                if len(batch) >= IMPORT_BATCH:
                    self._import_batch(c, batch, dims, counts)
                    batch = []
                    if progress is not None:
                        progress(position)
            if batch:
                self._import_batch(c, batch, dims, counts)
            for subject, stored in items.items():
                for start in range(0, len(stored), IMPORT_BATCH):
                    self._import_items(
                        c, subject, stored[start : start + IMPORT_BATCH], dims, counts
                    )
            if progress is not None:
                progress(position)
        return counts

    def _import_items(
        self,
        conn: Connection,
        subject: str,
        stored: _Items,
        dims: int,
        counts: dict[str, int],
    ) -> None:
        """Put exported store items again (``pgmem.put_items``): key, value, text and
        ttl as they were."""
        self._fill_vectors([item for _, item in stored], dims)
        items = ingest.as_jsonb([item for _, item in stored])
        try:
            rows = fetch_all(conn, queries.PUT_ITEMS, {"subject": subject, "items": items})
        except psycopg.Error as exc:
            raise _record_error(exc, [position for position, _ in stored]) from exc
        for row in rows:
            counts[row["action"]] = counts.get(row["action"], 0) + 1

    def _fill_vectors(self, items: Sequence[Row], dims: int) -> None:
        """Vectors for the imported items that bring none (or none of the tenant's size,
        or with reembed): without a model of that size they stay NULL, and the worker
        embeds them."""
        missing = [item for item in items if "embedding" not in item]
        embedder = self._get_embedder() if missing else None
        if missing and embedder is not None and embedder.dims == dims:
            vectors, _ = self._vectors([i["content"] for i in missing])
            for item, vector in zip(missing, vectors, strict=True):
                item["embedding"] = vector

    def _import_batch(
        self, conn: Connection, batch: _Batch, dims: int, counts: dict[str, int]
    ) -> None:
        self._fill_vectors([item for _, item, _ in batch], dims)
        try:
            rows = ingest.remember(conn, None, [item for _, item, _ in batch])
        except psycopg.Error as exc:
            raise _record_error(exc, [position for position, _, _ in batch]) from exc
        for row in rows:
            action = row["action"]
            counts[action] = counts.get(action, 0) + 1
            _, _, pinned = batch[row["item"] - 1]
            if pinned and row["memory_id"] is not None:
                pin = fetch_one(conn, queries.PIN, {"memory_id": row["memory_id"], "pinned": True})
                counts["pinned"] = counts.get("pinned", 0) + int(pin["changed"])


# ----------------------------------------------------------------- helpers


def _record_error(exc: psycopg.Error, positions: list[int]) -> ImportRecordError:
    """A batch's refusal as the import record it came from: remember_many and put_items
    name the bad item p_items[n] (10_input.sql), n counting from 1 within the batch."""
    message = _message(exc)
    named = _BATCH_ITEM.search(message)
    if named is not None and 0 < int(named[1]) <= len(positions):
        return ImportRecordError(positions[int(named[1]) - 1], _BATCH_ITEM.sub("", message, 1))
    return ImportRecordError(positions[0], message, last=positions[-1])


def _message(exc: psycopg.Error) -> str:
    diag = exc.diag
    primary = diag.message_primary or str(exc).strip().splitlines()[0]
    return f"{primary} (hint: {diag.message_hint})" if diag.message_hint else primary


@contextmanager
def _not_found(memory_id: int) -> Iterator[None]:
    try:
        yield
    except psycopg.Error as exc:
        if exc.sqlstate in NOT_FOUND_SQLSTATES:
            raise MemoryNotFound(memory_id, _message(exc)) from exc
        raise


def _kinds(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


_IMPORT_FIELDS = (
    "kind",
    "importance",
    "triple_subject",
    "triple_predicate",
    "triple_object",
    "session_id",
    "agent_id",
    "metadata",
    "valid_from",
)


def _store_item(
    position: int, record: Mapping[str, Any], user_id: str | None, dims: int, keep: bool
) -> tuple[str, Row]:
    """The subject and pgmem.put_items item of an exported store item."""
    subject = user_id or record.get("subject")
    if not isinstance(subject, str) or not subject.strip():
        raise ImportRecordError(position, "needs a non-empty 'subject' (or import with a user)")
    key, value = record.get("item_key"), record.get("item_value")
    if not isinstance(key, str) or not isinstance(value, Mapping):
        raise ImportRecordError(
            position, "a store item needs an 'item_key' and an 'item_value' object"
        )
    item: Row = {"key": key, "value": dict(value), "content": record.get("content")}
    if record.get("item_ttl_minutes") is not None:
        item["ttl"] = record["item_ttl_minutes"]
    embedding = record.get("embedding")
    if keep and isinstance(embedding, list) and len(embedding) == dims:
        item["embedding"] = embedding
    return subject, item


def _import_item(
    position: int, record: Mapping[str, Any], user_id: str | None, dims: int, *, keep: bool
) -> tuple[Row | None, bool]:
    """A remember_many item for an exported record, or None for a non-active one."""
    if not isinstance(record, Mapping):
        raise ImportRecordError(position, f"expected a JSON object, not {type(record).__name__}")
    if record.get("status", "active") != "active":
        return None, False
    subject = user_id or record.get("subject")
    if not isinstance(subject, str) or not subject.strip():
        raise ImportRecordError(position, "needs a non-empty 'subject' (or import with a user)")
    content = record.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ImportRecordError(position, "needs a non-empty 'content' string")
    kind = record.get("kind", "semantic")
    if kind not in KINDS:
        raise ImportRecordError(position, f"kind {kind!r} is not one of {', '.join(KINDS)}")
    # A record kept as said stays one (nothing derived from it may retire it); any
    # other memory arrives as an import.
    source = ingest.TURN if record.get("source") == ingest.TURN else "import"
    item: Row = {"subject": subject, "content": content, "source": source}
    for field in _IMPORT_FIELDS:
        if record.get(field) is not None:
            item[field] = record[field]
    embedding = record.get("embedding")
    if embedding is not None and not (
        isinstance(embedding, list)
        and all(isinstance(v, int | float) and math.isfinite(v) for v in embedding)
    ):
        raise ImportRecordError(position, "'embedding' must be a list of finite numbers or null")
    # A vector of another model (another size) is useless here: embed again instead.
    if keep and embedding and len(embedding) == dims:
        item["embedding"] = embedding
    return item, bool(record.get("pinned"))
