"""The ingest worker: drains ``pgmem.inbox`` and embeds what SQL wrote without vectors.

What it does with each kind of work:

- ``turn`` (queued by ``pgmem.enqueue``): the write path of :mod:`pgmem.ingest`, as
  ``Memory.add`` runs it: extract facts (rules, plus an LLM when one is configured),
  embed them and hand them, with any text the extractor refused, to one
  ``pgmem.remember_many`` call, which decides every item (rejections included).
- ``merge`` (queued by ``pgmem.remember`` for near-duplicates): merge the two facts'
  texts (LLM, or the more specific one kept whole) and call ``pgmem.merge``.
- ``consolidate`` (queued by the ``consolidate`` maintenance job,
  ``pgmem.mark_consolidation``): the subject's clusters of episodes
  (``pgmem.consolidation_clusters``) each become one insight, written by the LLM or,
  without one, the extractive digest (:mod:`pgmem.consolidate`), stored by
  ``pgmem.consolidate``. Its LLM calls run after the clusters are read and before
  anything is locked.
- ``embed`` job (queued by ``pgmem.start_reembed``, payload ``reembed`` = a model and
  ``memory_ids``): embed those memories with the worker's model, which must be the one
  asked for, and stage the vectors (``pgmem.stage_reembed``); the job that stages the
  last one switches the tenant to the new model.
- ``embed`` pass: active memories written by plain SQL without an embedding
  (``pgmem.claim_unembedded`` / ``pgmem.set_embedding``); no inbox row is involved.
- ``fold`` pass: sessions whose turns left the window (``pgmem.claim_folds``, a lease
  committed at once, so appends never wait on the LLM) get the next version of their
  rolling summary (:func:`pgmem.summarize.fold`, then ``pgmem.save_summary``).

Transactions: one per batch. Jobs are claimed with ``pgmem.claim_jobs`` (FOR UPDATE
SKIP LOCKED, so workers run side by side), each job runs in a savepoint with its
tenant bound, and is marked done (``pgmem.finish_job``) or failed
(``pgmem.fail_job``: exponential backoff, kept as ``failed`` after ``max_attempts``)
in that same transaction, which commits once. A worker killed mid-batch commits
nothing: its rows are pending again and the next worker applies them exactly once.
Extraction and embedding of a whole batch happen up front, so the batch transaction
holds its locks for the database work only.

Budget: each job has ``job_timeout`` seconds (default :data:`DEFAULT_JOB_TIMEOUT`,
``pgmem worker --job-timeout`` or ``PGMEM_JOB_TIMEOUT``) for its extraction, its
embedding and its SQL together, so one oversized or slow job cannot hold up the rest of
its batch. The Python side is a deadline checked after extraction and between embedding
chunks (a job over it is not embedded further); the SQL side is ``statement_timeout``,
set to what remains of the budget inside the job's savepoint, which cancels a statement
that runs or waits for a lock too long. A job over its budget fails with
:class:`JobTimeout`: retried with backoff, then ``failed`` like any other failure, while
the other jobs of the batch complete.

Waking: LISTEN ``pgmem_inbox`` on a separate autocommit connection (``pgmem.enqueue``
notifies it); without a notification the worker still polls every ``poll_interval``
seconds, which also picks up retries whose backoff has expired.

Stopping: SIGTERM or SIGINT lets the current batch finish and commit, then ``run``
returns. A second signal stops at once (the batch rolls back; nothing is lost).

Tenants: by default the worker serves every tenant, which needs a role that bypasses
row-level security and may bind tenants (a superuser, or a BYPASSRLS member of
``pgmem_service``); each job runs with ``pgmem.set_tenant(<its tenant>)``. With
``tenant=``, only that tenant's work is seen: a ``pgmem_service`` member binds it
per transaction, a role that bypasses RLS first drops to ``pgmem_service`` (``SET
ROLE``) so that RLS scopes the claims, and a tenant's own login role needs no
binding at all.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from types import FrameType
from typing import Any, Literal

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pgmem import ingest, queries
from pgmem.consolidate import consolidate_subject
from pgmem.embed import Embedder, degraded, embedder_from_env
from pgmem.extract import ExtractionResult, LLMExtractor, merge_facts
from pgmem.extract.llm import Judgement
from pgmem.queries import layers as lq
from pgmem.queries import worker as wq
from pgmem.queries.worker import CHANNEL
from pgmem.summarize import fold

__all__ = [
    "APPLICATION_NAME",
    "CHANNEL",
    "DEFAULT_BATCH",
    "DEFAULT_JOB_TIMEOUT",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_POLL_INTERVAL",
    "BatchStats",
    "JobTimeout",
    "Worker",
    "WorkerError",
    "WorkerStats",
]

log = logging.getLogger(__name__)

# pgmem.claim_jobs' default. With the local model, batches of 16 and 64 turns ran at the
# same rate (embedding dominates and costs the same per text either way); smaller
# batches hold their row locks for less time and redo less after a crash.
DEFAULT_BATCH = 16
# Seconds between polls when no notification arrives: a lost notification (worker
# restarted, listener reconnecting) or an expired backoff costs at most this much delay.
DEFAULT_POLL_INTERVAL = 5.0
# pgmem.fail_job's default: with its 2, 4, 8, 16 s backoff a job fails for good about
# half a minute after its first attempt, long enough to ride out a restart.
DEFAULT_MAX_ATTEMPTS = 5
# Seconds one job may take (extraction + embedding + SQL). A turn at enqueue's 256 KB
# limit takes ~2 s to extract here and minutes to embed its thousands of facts; an
# ordinary turn takes well under a second, so 30 s fails only the pathological ones.
DEFAULT_JOB_TIMEOUT = 30.0
# Memories embedded per pass of the embed pass (one embedding call, one transaction);
# also the chunk size between two budget checks when a job's facts are embedded.
EMBED_PASS_LIMIT = 64
# Sessions summarized per fold pass: each may be an LLM call, made one after another.
FOLD_PASS_LIMIT = 8
# Threads asking the LLM about the turns of one batch at once; rules alone are CPU-bound
# and run in the calling thread.
LLM_CONCURRENCY = 8
# Stop waiting this often to look at the stop flag (a signal does not interrupt the wait).
_WAIT_SLICE = 0.5
# After losing the database, wait 1, 2, 4 … seconds (at most this) before reconnecting.
_RECONNECT_MAX_DELAY = 30.0
# Characters of error text kept per failed attempt (fail_job keeps at most 2000).
_TRACEBACK_CHARS = 1800
APPLICATION_NAME = "pgmem worker"


class WorkerError(RuntimeError):
    """The worker cannot start: wrong role for the tenant mode asked for, and the like."""


class JobError(ValueError):
    """A job that can never succeed (malformed payload): failed at once, not retried."""


class JobTimeout(TimeoutError):
    """A job ran over its budget (``job_timeout``): failed for this attempt, retried later."""


# ------------------------------------------------------------------------- stats


@dataclass
class BatchStats:
    """What one batch did."""

    jobs: int = 0
    done: int = 0
    failed: int = 0  # attempts that failed (retried later, or failed for good)
    facts: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class WorkerStats:
    """Totals of one :meth:`Worker.run`."""

    batches: int = 0
    jobs: int = 0
    done: int = 0
    failed: int = 0
    facts: int = 0
    embedded: int = 0
    folded: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # serving, after the model was loaded

    def add(self, batch: BatchStats) -> None:
        self.batches += 1
        self.jobs += batch.jobs
        self.done += batch.done
        self.failed += batch.failed
        self.facts += batch.facts
        for action, count in batch.actions.items():
            self.actions[action] = self.actions.get(action, 0) + count

    def as_dict(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "jobs": self.jobs,
            "done": self.done,
            "failed": self.failed,
            "facts": self.facts,
            "embedded": self.embedded,
            "folded": self.folded,
            "actions": dict(sorted(self.actions.items())),
            "seconds": round(self.seconds, 3),
        }


# -------------------------------------------------------------------------- jobs


@dataclass
class _Turn:
    """A turn job, planned (:func:`pgmem.ingest.plan`) and embedded before any SQL runs."""

    result: ExtractionResult | None = None
    planned: list[ingest.Planned] = field(default_factory=list)
    vectors: list[list[float] | None] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)  # messages nothing kept
    error: BaseException | None = None
    spent: float = 0.0  # seconds of its budget used before its SQL runs
    degraded: str | None = None  # why its facts are stored without vectors


@dataclass
class _Reembed:
    """A re-embed job: the memories' ids and, once embedded, their new vectors."""

    model: str = ""
    ids: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    vectors: list[list[float]] = field(default_factory=list)
    error: BaseException | None = None
    spent: float = 0.0


def _reembed_payload(payload: Mapping[str, Any]) -> tuple[str, list[int]]:
    model, ids = payload.get("reembed"), payload.get("memory_ids")
    if not isinstance(model, str) or not model or not isinstance(ids, list):
        raise JobError("embed payload needs 'reembed' (a model) and 'memory_ids'")
    try:
        return model, [int(i) for i in ids]
    except (TypeError, ValueError):
        raise JobError("embed payload 'memory_ids' must be integers") from None


@dataclass
class _Merge:
    """A merge job: which row to keep, and the merged text with its vector when it is new."""

    keep_id: int | None = None
    other_id: int | None = None
    texts: tuple[str, str] | None = None  # (stored, new) when both rows are active
    content: str | None = None
    vector: list[float] | None = None
    error: BaseException | None = None
    skipped: str | None = None  # both kept: neither says all the other does
    spent: float = 0.0


@dataclass
class _Judge:
    """A judge job: the new fact, its undecided close neighbours, and the LLM's decisions."""

    memory_id: int | None = None
    pairs: list[tuple[int, str, str]] = field(default_factory=list)  # (other id, old, new)
    decisions: list[tuple[int, Judgement]] = field(default_factory=list)
    skipped: str | None = None
    error: BaseException | None = None
    spent: float = 0.0


# What a claimed job becomes before its SQL runs.
_Prepared = _Turn | _Merge | _Judge | _Reembed


def _messages(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise JobError("turn payload has no 'messages' array")
    if not all(isinstance(m, Mapping) and isinstance(m.get("content"), str) for m in messages):
        raise JobError("turn payload 'messages' must be {role, content} objects")
    return messages


def _merge_ids(payload: Mapping[str, Any]) -> tuple[int, int]:
    """(stored, new): pgmem.remember queues {memory_id: the new fact, related_id: the
    stored one it is close to}."""
    try:
        return int(payload["related_id"]), int(payload["memory_id"])
    except (KeyError, TypeError, ValueError):
        raise JobError("merge payload needs memory_id and related_id") from None


def _error_text(exc: BaseException) -> str:
    """The error, where the worker was (innermost frames) and, for a database error, the
    server's context, in that order of importance, for inbox.last_error."""
    context = ""
    if isinstance(exc, psycopg.Error) and exc.diag.message_primary:
        diag = exc.diag
        error = f"{type(exc).__module__}.{type(exc).__name__}: {diag.message_primary}"
        error += f" [{exc.sqlstate}]" if exc.sqlstate else ""
        error += f"\nHINT: {diag.message_hint}" if diag.message_hint else ""
        context = f"\nCONTEXT: {diag.context.strip()}" if diag.context else ""
    else:
        error = "".join(traceback.format_exception_only(exc)).strip()
        cause = exc.__cause__  # a JobTimeout keeps the cancelled statement's context
        if isinstance(cause, psycopg.Error) and cause.diag.context:
            context = f"\nCONTEXT: {cause.diag.context.strip()}"
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-4)).rstrip()
    text = "\n".join(part for part in (error, frames) if part) + context
    return text if len(text) <= _TRACEBACK_CHARS else text[: _TRACEBACK_CHARS - 1] + "…"


def _vector(values: Sequence[float] | None) -> Vector | None:
    return None if values is None else Vector(list(values))


# ------------------------------------------------------------------------ worker

Conn = psycopg.Connection[dict[str, Any]]


class Worker:
    """Claims inbox jobs in batches and writes what they hold through pgmem's SQL API.

    ``embedder`` defaults to :func:`pgmem.embed.embedder_from_env`; ``llm`` to
    :meth:`LLMExtractor.from_env` (None without OPENAI_* settings: rules only, and
    merges keep the more specific fact); pass ``llm=None`` for no LLM.
    """

    def __init__(
        self,
        dsn: str,
        *,
        tenant: str | None = None,
        batch: int = DEFAULT_BATCH,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        job_timeout: float = DEFAULT_JOB_TIMEOUT,
        embedder: Embedder | None = None,
        llm: LLMExtractor | Literal["env"] | None = "env",
        episode_roles: Iterable[str] = (),
    ) -> None:
        if batch < 1:
            raise ValueError("batch must be at least 1")
        if poll_interval <= 0:
            raise ValueError("poll_interval must be positive")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not job_timeout > 0:
            raise ValueError("job_timeout must be positive")
        self.dsn = dsn
        self.tenant = tenant
        self.batch = batch
        self.poll_interval = poll_interval
        self.max_attempts = max_attempts
        self.job_timeout = job_timeout
        self.embedder = embedder if embedder is not None else embedder_from_env()
        self.llm = LLMExtractor.from_env() if llm == "env" else llm
        self.episode_roles = ingest.episode_roles(episode_roles)
        self.stats = WorkerStats()
        self._stop = threading.Event()
        self._signals = 0
        # False when the session's tenant is fixed (a tenant's login role).
        self._bind_per_job = True

    # ------------------------------------------------------------------ control

    def request_stop(self) -> None:
        """Finish the current batch, commit it, then return from :meth:`run`."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        if self._signals > 1:
            # Second signal: stop now. The open batch rolls back; its jobs stay pending.
            raise KeyboardInterrupt
        log.info("%s: finishing the current batch, then exiting", signal.Signals(signum).name)
        self.request_stop()

    @contextmanager
    def _signal_handlers(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach the main thread only; call request_stop() instead
            return
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    # -------------------------------------------------------------- connections

    def connect(self) -> Conn:
        """A connection for batches, with the tenant mode applied (see the module doc)."""
        conn = psycopg.connect(
            self.dsn, row_factory=dict_row, application_name=APPLICATION_NAME, autocommit=True
        )
        try:
            register_vector(conn)
            self._configure(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _configure(self, conn: Conn) -> None:
        who = conn.execute(wq.SESSION).fetchone()
        assert who is not None
        role, bypasses, can_bind = who["role"], who["bypasses_rls"], who["can_bind"]
        bound = who["bound_tenant"]
        if bound is not None and not can_bind:
            # A tenant's own login role: its tenant is fixed, nothing to bind.
            if self.tenant not in (None, bound):
                raise WorkerError(f"role {role} is bound to tenant {bound}, not {self.tenant}")
            self.tenant = bound
            self._bind_per_job = False
            return
        if not can_bind:
            raise WorkerError(
                f"role {role} cannot bind tenants: run the worker as a member of pgmem_service "
                "(or a superuser), or as a tenant's own login role"
            )
        if self.tenant is None:
            if not bypasses:
                raise WorkerError(
                    f"role {role} is subject to row-level security and sees one tenant at a "
                    "time: pass --tenant, or serve all tenants as a role with BYPASSRLS"
                )
            return
        if bypasses:
            # RLS is what scopes pgmem.claim_jobs to one tenant; a role that bypasses
            # it would claim every tenant's jobs.
            conn.execute(wq.DROP_TO_SERVICE)
            log.info("serving tenant %s only: acting as pgmem_service (was %s)", self.tenant, role)
        with conn.transaction():
            conn.execute(queries.BIND_TENANT, {"tenant": self.tenant})  # PM002 now if it is unknown

    def _listen(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.dsn, autocommit=True, application_name=APPLICATION_NAME)
        conn.execute(wq.LISTEN)
        return conn

    @contextmanager
    def _transaction(self, conn: Conn) -> Iterator[None]:
        """One batch transaction, bound to the worker's tenant when it has one."""
        with conn.transaction():
            if self.tenant is not None and self._bind_per_job:
                conn.execute(queries.BIND_TENANT, {"tenant": self.tenant})
            yield

    def _bind(self, conn: Conn, tenant: str) -> None:
        """Bind the job's tenant and declare the worker's embedding model (PM025 guards)."""
        model = {"model": self.embedder.model}
        if self._bind_per_job:
            conn.execute(queries.BIND_TENANT_MODEL, {"tenant": tenant, **model})
        else:
            conn.execute(queries.USE_EMBEDDING_MODEL, {**model, "local": True})

    # --------------------------------------------------------------------- loop

    def run(self, *, once: bool = False) -> WorkerStats:
        """Work until stopped (SIGTERM/SIGINT or :meth:`request_stop`); with ``once``,
        until no job is due and no memory lacks an embedding. Returns this run's totals."""
        self.stats = WorkerStats()
        delay = 1.0
        with self._signal_handlers():
            while not self.stopping:
                try:
                    self._serve(once=once)
                    break
                except psycopg.OperationalError as exc:
                    if once:
                        raise
                    log.warning("lost the database (%s); reconnecting in %.0f s", exc, delay)
                    self._stop.wait(delay)
                    delay = min(delay * 2, _RECONNECT_MAX_DELAY)
        return self.stats

    def _serve(self, *, once: bool) -> None:
        with self.connect() as conn, contextlib.ExitStack() as stack:
            # Listen before the first claim, so nothing enqueued meanwhile goes unnoticed.
            listener = None if once else stack.enter_context(self._listen())
            # Connected and allowed to work: now load the model (seconds for the local
            # one), before claiming anything.
            load = getattr(self.embedder, "load", None)
            if callable(load):
                load()
            started = time.monotonic()
            stack.callback(self._add_time, started)
            log.info(
                "worker ready: %s, batch %d, %s",
                f"tenant {self.tenant}" if self.tenant else "all tenants",
                self.batch,
                "draining once" if once else f"polling every {self.poll_interval:g} s",
            )
            next_embed_pass = 0.0
            while not self.stopping:
                jobs = self.run_batch(conn)
                embedded = 0
                # The embed pass scans for rows without a vector: run it once the queue is
                # drained, or every poll interval while a backlog is being worked off.
                if not self.stopping and (jobs < self.batch or time.monotonic() >= next_embed_pass):
                    embedded = self.embed_pass(conn)
                    next_embed_pass = time.monotonic() + self.poll_interval
                folded = 0 if self.stopping else self.fold_pass(conn)
                if jobs >= self.batch or embedded >= EMBED_PASS_LIMIT or folded >= FOLD_PASS_LIMIT:
                    continue  # more may be waiting
                if listener is None:
                    if jobs == 0 and embedded == 0 and folded == 0:
                        return
                    continue
                self._wait(listener)

    def _add_time(self, started: float) -> None:
        self.stats.seconds += time.monotonic() - started

    def _wait(self, listener: psycopg.Connection[Any]) -> None:
        """Until a notification, the poll interval, or a stop request."""
        deadline = time.monotonic() + self.poll_interval
        while not self.stopping:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if any(True for _ in listener.notifies(timeout=min(remaining, _WAIT_SLICE))):
                return

    # -------------------------------------------------------------------- batch

    def run_batch(self, conn: Conn) -> int:
        """Claim, process and commit one batch of inbox jobs; returns how many were claimed."""
        stats = BatchStats()
        started = time.monotonic()
        with self._transaction(conn):
            # Only jobs this worker's model can do: another model's vectors are
            # refused (PM025), and a claim would spend the job's retries.
            jobs = conn.execute(
                wq.CLAIM_JOBS, {"limit": self.batch, "model": self.embedder.model}
            ).fetchall()
            if not jobs:
                return 0
            stats.jobs = len(jobs)
            log.info(
                "batch start: %d jobs (inbox ids %s..%s)",
                len(jobs),
                jobs[0]["inbox_id"],
                jobs[-1]["inbox_id"],
            )
            prepared = self._prepare(conn, jobs)
            # Each job's pgmem.remember locks its subject until the batch commits. Taking
            # them in one global order keeps two workers' batches from deadlocking; the
            # sort is stable, so a subject's turns still apply in queue order.
            for job in sorted(jobs, key=lambda j: (j["tenant_id"], j["subject"] or "")):
                self._run_job(conn, job, prepared[job["inbox_id"]], stats)
        if not self.stopping:
            self._link_episodes(conn, jobs)
        stats.seconds = time.monotonic() - started
        self.stats.add(stats)
        log.info(
            "batch done: %d jobs, %d done, %d failed, %d facts %s in %.2f s",
            stats.jobs,
            stats.done,
            stats.failed,
            stats.facts,
            stats.actions or "",
            stats.seconds,
        )
        return stats.jobs

    def _link_episodes(self, conn: Conn, jobs: list[dict[str, Any]]) -> None:
        """Link the stated turns the batch stored (``pgmem.link_episodes``), once it has
        committed: a turn's write no longer makes its links, and its subject is not
        held meanwhile. What fails here is left to the ``links`` job."""
        subjects: dict[str, set[str]] = {}
        for job in jobs:
            if job["job"] == "turn" and job["subject"]:
                subjects.setdefault(job["tenant_id"], set()).add(job["subject"])
        for tenant, names in sorted(subjects.items()):
            try:
                with conn.transaction():
                    self._bind(conn, tenant)
                    row = conn.execute(
                        wq.LINK_EPISODES, {"tenant": tenant, "subjects": sorted(names)}
                    ).fetchone()
            except psycopg.Error as exc:
                if conn.broken:
                    raise
                log.warning("linking stated turns of tenant %s: %s", tenant, exc)
                continue
            if row is not None and row["episodes"]:
                log.info("linked %d stated turns of %d subjects", row["episodes"], row["subjects"])

    def _run_job(
        self, conn: Conn, job: dict[str, Any], prepared: _Prepared | None, stats: BatchStats
    ) -> None:
        tenant, inbox_id = job["tenant_id"], job["inbox_id"]
        try:
            with conn.transaction():  # a savepoint: a failing job undoes only its own writes
                self._limit_statements(conn, prepared)
                self._bind(conn, tenant)
                if isinstance(prepared, _Turn):
                    result = self._remember_turn(conn, job, prepared)
                elif isinstance(prepared, _Merge):
                    result = self._merge(conn, prepared)
                elif isinstance(prepared, _Judge):
                    result = self._judge(conn, prepared)
                elif job["job"] == "consolidate":
                    result = self._consolidate(conn, job)
                elif isinstance(prepared, _Reembed):
                    result = self._stage_reembed(conn, prepared)
                else:
                    raise JobError(f"the worker does not handle {job['job']!r} jobs")
                conn.execute(
                    wq.FINISH_JOB, {"tenant": tenant, "inbox_id": inbox_id, "result": Jsonb(result)}
                )
        except Exception as exc:
            if conn.broken:
                raise  # the connection is gone, and the batch with it: nothing was applied
            if isinstance(exc, psycopg.errors.QueryCanceled) and "statement timeout" in str(exc):
                # The server's context (where it was cancelled) follows in last_error.
                over = JobTimeout(
                    f"job over its {self.job_timeout:g} s budget in the database:"
                    f" {exc.diag.message_primary}"
                )
                over.__cause__, over.__traceback__ = exc, exc.__traceback__
                exc = over
            self._fail(conn, job, exc)
            stats.failed += 1
            return
        stats.done += 1
        stats.facts += int(result.get("facts", 0))
        for action in result.get("actions", ()):
            name = str(action.get("action"))
            stats.actions[name] = stats.actions.get(name, 0) + 1

    def _limit_statements(self, conn: Conn, prepared: _Prepared | None) -> None:
        """Give the job's statements what remains of its budget (SET LOCAL inside the
        savepoint; the next job sets its own, and the batch's commit ends it)."""
        if prepared is not None and prepared.error is not None:
            return  # it fails with its own error
        remaining = self.job_timeout - (prepared.spent if prepared is not None else 0.0)
        if remaining <= 0:
            raise JobTimeout(
                f"job over its {self.job_timeout:g} s budget before its SQL ran"
                f" ({prepared.spent if prepared else 0:.1f} s extracting and embedding)"
            )
        # statement_timeout is in whole milliseconds, and 0 would mean no limit.
        conn.execute(wq.SET_STATEMENT_TIMEOUT, {"timeout": str(max(1, round(remaining * 1000)))})

    def _fail(self, conn: Conn, job: dict[str, Any], exc: Exception) -> None:
        tenant, inbox_id, attempt = job["tenant_id"], job["inbox_id"], job["attempts"] + 1
        # A malformed job cannot succeed later: this attempt is its last.
        max_attempts = attempt if isinstance(exc, JobError) else self.max_attempts
        with conn.transaction():
            self._bind(conn, tenant)
            row = conn.execute(
                wq.FAIL_JOB,
                {
                    "tenant": tenant,
                    "inbox_id": inbox_id,
                    "error": _error_text(exc),
                    "max_attempts": max_attempts,
                },
            ).fetchone()
        final = row is not None and row["status"] == "failed"
        log.warning(
            "job %s (%s, tenant %s) attempt %d %s: %s: %s",
            inbox_id,
            job["job"],
            tenant,
            attempt,
            "failed for good" if final else "failed, will be retried",
            type(exc).__name__,
            exc,
        )

    # ------------------------------------------------------------------ prepare

    def _prepare(self, conn: Conn, jobs: list[dict[str, Any]]) -> dict[int, _Prepared | None]:
        """Extract every turn and merge text of the batch, then embed them all in one call."""
        prepared: dict[int, _Prepared | None] = {job["inbox_id"]: None for job in jobs}
        turns = [job for job in jobs if job["job"] == "turn"]
        merges = [job for job in jobs if job["job"] == "merge"]
        judges = [job for job in jobs if job["job"] == "judge"]
        for job in turns:
            prepared[job["inbox_id"]] = _Turn()
        for job in merges:
            prepared[job["inbox_id"]] = self._load_merge(conn, job)
        for job in judges:
            prepared[job["inbox_id"]] = self._load_judge(conn, job)
        for job in jobs:
            if job["job"] == "embed":
                prepared[job["inbox_id"]] = self._load_reembed(conn, job)

        def think(job: dict[str, Any]) -> None:
            item = prepared[job["inbox_id"]]
            assert item is not None
            started = time.monotonic()
            try:
                if isinstance(item, _Turn):
                    messages = _messages(job["payload"])
                    item.planned, item.result = ingest.plan(
                        messages, llm=self.llm, episode_roles=self.episode_roles
                    )
                    item.skipped = ingest.unstored(messages, item.planned, self.episode_roles)
                elif isinstance(item, _Merge) and item.error is None and item.texts is not None:
                    self._decide_merge(item, *item.texts)
                elif isinstance(item, _Judge) and item.error is None:
                    self._decide_judge(item)
            except Exception as exc:
                item.error = exc
            finally:
                item.spent += time.monotonic() - started
            self._check_budget(item, "extracting")

        todo = turns + merges + judges
        if self.llm is not None and len(todo) > 1:
            # Waiting on the LLM: ask about several jobs at once.
            with ThreadPoolExecutor(min(LLM_CONCURRENCY, len(todo))) as pool:
                list(pool.map(think, todo))
        else:
            for job in todo:
                think(job)
        for job in turns:
            self._resolve_times(conn, job, prepared[job["inbox_id"]])
        # A judge's merged text is embedded by the embed pass (pgmem.merge clears the vector).
        self._embed_prepared(
            [p for p in prepared.values() if isinstance(p, _Turn | _Merge | _Reembed)]
        )
        return prepared

    def _resolve_times(self, conn: Conn, job: dict[str, Any], item: _Prepared | None) -> None:
        """A turn's relative dates resolved (:func:`pgmem.ingest.resolve_times_of`) as of
        the turn's ``occurred_at``, else when it was queued, before its facts are embedded."""
        if not isinstance(item, _Turn) or item.error is not None or not job["subject"]:
            return
        occurred = job["payload"].get("occurred_at")
        try:
            at = datetime.fromisoformat(occurred) if isinstance(occurred, str) else None
            with conn.transaction():
                self._bind(conn, job["tenant_id"])
                item.planned = ingest.resolve_times_of(
                    conn, job["subject"], item.planned, at or job["created_at"]
                )
        except Exception as exc:
            if conn.broken:
                raise
            item.error = exc

    def _load_reembed(self, conn: Conn, job: dict[str, Any]) -> _Reembed:
        item = _Reembed()
        try:
            item.model, ids = _reembed_payload(job["payload"])
            if item.model != self.embedder.model:
                # Not a JobError: a worker running that model may take it on a retry.
                raise WorkerError(
                    f"re-embed to {item.model} needs a worker running that model; "
                    f"this one runs {self.embedder.model}"
                )
            with conn.transaction():
                self._bind(conn, job["tenant_id"])
                rows = conn.execute(
                    wq.LOAD_MEMORIES, {"tenant": job["tenant_id"], "ids": ids}
                ).fetchall()
        except Exception as exc:
            if conn.broken:
                raise
            item.error = exc
            return item
        # Memories purged since the job was queued have nothing to stage.
        rows.sort(key=lambda r: r["memory_id"])
        item.ids = [r["memory_id"] for r in rows]
        item.texts = [r["content"] for r in rows]
        return item

    def _load_merge(self, conn: Conn, job: dict[str, Any]) -> _Merge:
        item = _Merge()
        try:
            stored_id, new_id = _merge_ids(job["payload"])
            with conn.transaction():
                self._bind(conn, job["tenant_id"])
                rows = {
                    r["memory_id"]: r
                    for r in conn.execute(
                        wq.LOAD_MEMORIES, {"tenant": job["tenant_id"], "ids": [stored_id, new_id]}
                    )
                }
        except Exception as exc:
            if conn.broken:
                raise
            item.error = exc
            return item
        item.keep_id, item.other_id = stored_id, new_id
        stored, new = rows.get(stored_id), rows.get(new_id)
        if stored and new and stored["status"] == new["status"] == "active":
            # Only a fact that says all the other does may stand for both
            # (pgmem.merge_keeper, 13_conflict_decisions.sql): two facts that merely look alike
            # both stay, with or without a model to write one text for them.
            with conn.transaction():
                self._bind(conn, job["tenant_id"])
                keep = conn.execute(
                    wq.MERGE_KEEPER, {"stored_id": stored_id, "new_id": new_id}
                ).fetchone()
            assert keep is not None
            if keep["keep_id"] is None:
                item.skipped = "kept both: neither fact says all the other does"
                return item
            if self.llm is not None:
                # A model writes one text for both (_decide_merge picks the row).
                item.texts = (stored["content"], new["content"])
            elif keep["keep_id"] == new_id:
                item.keep_id, item.other_id = new_id, stored_id
        # Otherwise pgmem.merge says what happened (gone: PM022; merged or changed: skipped).
        return item

    def _load_judge(self, conn: Conn, job: dict[str, Any]) -> _Judge:
        item = _Judge()
        payload = job["payload"]
        try:
            item.memory_id = int(payload["memory_id"])
            related = [int(i) for i in payload["related_ids"]]
        except (KeyError, TypeError, ValueError):
            item.error = JobError("judge payload needs memory_id and related_ids")
            return item
        if self.llm is None:
            item.skipped = "no LLM configured: the offline rules decided at write"
            return item
        try:
            with conn.transaction():
                self._bind(conn, job["tenant_id"])
                rows = {
                    r["memory_id"]: r
                    for r in conn.execute(
                        wq.LOAD_MEMORIES,
                        {"tenant": job["tenant_id"], "ids": [item.memory_id, *related]},
                    )
                }
        except Exception as exc:
            if conn.broken:
                raise
            item.error = exc
            return item
        new = rows.get(item.memory_id)
        if new is not None and new["status"] == "active":
            item.pairs = [
                (i, rows[i]["content"], new["content"])
                for i in related
                if i in rows and rows[i]["status"] == "active"
            ]
        # Otherwise pgmem.resolve_conflict would say skipped: nothing left to ask.
        return item

    def _decide_judge(self, item: _Judge) -> None:
        assert self.llm is not None or not item.pairs
        for other_id, old_text, new_text in item.pairs:
            assert self.llm is not None
            item.decisions.append((other_id, self.llm.judge(old_text, new_text)))

    def _judge(self, conn: Conn, item: _Judge) -> dict[str, Any]:
        if item.error is not None:
            raise item.error
        if item.skipped is not None:
            return {"actions": [], "skipped": item.skipped}
        actions = []
        for other_id, judgement in item.decisions:
            row = conn.execute(
                wq.RESOLVE_CONFLICT,
                {
                    "memory_id": item.memory_id,
                    "other_id": other_id,
                    "decision": judgement.decision,
                    "content": judgement.merged if judgement.decision == "merge" else None,
                    "labels": Jsonb(judgement.labels) if judgement.labels else None,
                },
            ).fetchone()
            assert row is not None
            actions.append({**row, "decision": judgement.decision})
        return {"actions": actions}

    def _decide_merge(self, item: _Merge, stored_text: str, new_text: str) -> None:
        """Which row to keep, and its new text if the merge wrote one."""
        merged = merge_facts(stored_text, new_text, llm=self.llm)
        if merged == new_text and merged != stored_text:
            # The new fact says more: keep its row as it is.
            item.keep_id, item.other_id = item.other_id, item.keep_id
        elif merged != stored_text:
            item.content = merged

    def _embed_prepared(self, items: list[_Prepared]) -> None:
        """Embed each job's facts (or merged text) in chunks, against its budget.

        One embedding call per job rather than per batch: the local model costs the same
        per text either way (see DEFAULT_BATCH), and only then is the time a job's own,
        so a turn with thousands of facts fails alone instead of stalling its batch."""
        for item in items:
            if item.error is not None:
                continue
            if isinstance(item, _Turn):
                texts = ingest.stored_texts(item.planned)
            elif isinstance(item, _Reembed):
                texts = item.texts
            elif isinstance(item, _Merge) and item.content is not None:
                texts = [item.content]
            else:
                continue
            vectors: list[list[float]] = []
            try:
                for start in range(0, len(texts), EMBED_PASS_LIMIT):
                    started = time.monotonic()
                    try:
                        vectors += self.embedder.embed(texts[start : start + EMBED_PASS_LIMIT])
                    finally:
                        item.spent += time.monotonic() - started
                    if self._check_budget(item, "embedding"):
                        break
            except Exception as exc:
                if isinstance(item, _Turn):
                    # An embedder outage does not hold a turn back: its facts are
                    # stored with their text now, and the embed pass gives them
                    # vectors once the embedder answers again.
                    item.degraded = degraded(exc, "facts stored without vectors")
                    vectors = []
                else:
                    item.error = exc
            if item.error is not None:
                continue
            if isinstance(item, _Reembed):
                item.vectors = vectors
            elif isinstance(item, _Turn):
                item.vectors = ingest.spread(item.planned, vectors)
            elif isinstance(item, _Merge):
                item.vector = vectors[0]

    def _check_budget(self, item: _Prepared, doing: str) -> bool:
        """Marks a job that ran over its budget failed; True when it did."""
        if item.error is None and item.spent > self.job_timeout:
            item.error = JobTimeout(
                f"job over its {self.job_timeout:g} s budget while {doing}"
                f" ({item.spent:.1f} s spent)"
            )
        return isinstance(item.error, JobTimeout)

    # -------------------------------------------------------------------- apply

    def _remember_turn(self, conn: Conn, job: dict[str, Any], turn: _Turn) -> dict[str, Any]:
        if turn.error is not None:
            raise turn.error
        assert turn.result is not None
        if not job["subject"]:
            raise JobError("turn job has no subject")
        payload = job["payload"]
        metadata = payload.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise JobError("turn payload 'metadata' must be an object")
        actions: list[dict[str, Any]] = []
        if turn.planned:
            batch = ingest.items(
                turn.planned,
                turn.vectors,
                session_id=job["session_id"],
                agent_id=job["agent_id"],
                metadata=metadata,
                valid_from=payload.get("occurred_at"),
                confidence=payload.get("confidence"),
                expires_at=payload.get("expires_at"),
            )
            for row in ingest.remember(conn, job["subject"], batch):
                planned = turn.planned[row.pop("item") - 1]
                action = {k: v for k, v in row.items() if v is not None}
                if planned.rejected is not None:
                    action["reason"] = planned.rejected
                if planned.source == ingest.TURN:
                    action["episode"] = True
                actions.append(action)
        actions += turn.skipped
        result: dict[str, Any] = {"facts": len(turn.result.facts), "actions": actions}
        if turn.result.fallback_reason:
            result["fallback_reason"] = turn.result.fallback_reason
        if turn.degraded:
            result["degraded"] = turn.degraded
        return result

    def _stage_reembed(self, conn: Conn, item: _Reembed) -> dict[str, Any]:
        if item.error is not None:
            raise item.error
        row = conn.execute(
            wq.STAGE_REEMBED,
            {"model": item.model, "ids": item.ids, "embeddings": item.vectors or None},
        ).fetchone()
        assert row is not None
        return {"model": item.model, "embedded": len(item.ids), "state": row["state"]}

    def _merge(self, conn: Conn, item: _Merge) -> dict[str, Any]:
        if item.error is not None:
            raise item.error
        if item.skipped is not None:
            return {"actions": [], "skipped": item.skipped}
        row = conn.execute(
            wq.MERGE,
            {
                "keep_id": item.keep_id,
                "other_id": item.other_id,
                "content": item.content,
                "embedding": _vector(item.vector),
            },
        ).fetchone()
        assert row is not None
        return {"actions": [dict(row)]}

    def _consolidate(self, conn: Conn, job: dict[str, Any]) -> dict[str, Any]:
        if not job["subject"]:
            raise JobError("consolidate job has no subject")
        return consolidate_subject(
            conn,
            job["subject"],
            embedder=self.embedder,
            llm=self.llm,
            now=job["payload"].get("now"),
        )

    # ---------------------------------------------------------------- embed pass

    def embed_pass(self, conn: Conn) -> int:
        """Embed active memories that have no vector; returns how many got one."""
        embedded = 0
        with self._transaction(conn):
            rows = conn.execute(
                wq.CLAIM_UNEMBEDDED, {"limit": EMBED_PASS_LIMIT, "model": self.embedder.model}
            ).fetchall()
            if not rows:
                return 0
            try:
                vectors = self.embedder.embed([r["content"] for r in rows])
            except Exception as exc:
                log.warning("embed pass: %d memories left without embedding: %s", len(rows), exc)
                return 0
            for row, vector in zip(rows, vectors, strict=True):
                try:
                    with conn.transaction():
                        self._bind(conn, row["tenant_id"])
                        conn.execute(
                            wq.SET_EMBEDDING,
                            {
                                "memory_id": row["memory_id"],
                                "embedding": _vector(vector),
                                "model": self.embedder.model,
                            },
                        )
                except psycopg.Error as exc:
                    if conn.broken:
                        raise
                    log.warning(
                        "embed pass: memory %s of tenant %s: %s",
                        row["memory_id"],
                        row["tenant_id"],
                        exc,
                    )
                else:
                    embedded += 1
        self.stats.embedded += embedded
        log.info("embed pass: %d memories embedded", embedded)
        return embedded

    def fold_pass(self, conn: Conn) -> int:
        """Fold the turns that left their session's window into its rolling summary;
        returns how many sessions were claimed."""
        with self._transaction(conn):
            claims = conn.execute(lq.CLAIM_FOLDS, {"limit": FOLD_PASS_LIMIT}).fetchall()
        # The leases are committed: the summaries are written outside any transaction.
        for claim in claims:
            folded = fold(claim["previous_summary"], claim["turns"], self.llm)
            try:
                with conn.transaction():
                    self._bind(conn, claim["tenant_id"])
                    row = conn.execute(
                        lq.SAVE_SUMMARY,
                        {
                            "subject": claim["subject"],
                            "session_id": claim["session_id"],
                            "from_seq": claim["from_seq"],
                            "through_seq": claim["through_seq"],
                            "summary": folded.summary,
                            "method": folded.method,
                            "model": folded.model,
                        },
                    ).fetchone()
            except psycopg.Error as exc:
                if conn.broken:
                    raise
                # The lease runs out and the next pass tries again.
                log.warning(
                    "fold pass: session %s of tenant %s: %s",
                    claim["session_id"],
                    claim["tenant_id"],
                    exc,
                )
                continue
            if row is not None and row["version"] is not None:
                self.stats.folded += 1
        if claims:
            log.info("fold pass: %d sessions summarized", len(claims))
        return len(claims)
