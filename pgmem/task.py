"""Working memory: :class:`Task`, the state of one task in progress.

Over ``sql/functions/72_task.sql``. The plan is written first; each step is recorded
when it completes, idempotently, so an agent that crashed resumes from the last
recorded step::

    task = memory.resume_task("alice", "chat-42") or memory.start_task(
        "alice", "book a flight", ["search", "book", "email receipt"], session_id="chat-42")
    for step in range(task.state()["current_step"], len(task.state()["plan"]) + 1):
        ...                                       # do the work
        task.record(step, observation="found 3 flights")
    task.finish("booked AF123", learned_rule="Book the cheapest direct flight")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from pgmem import ingest
from pgmem.queries import layers as lq
from pgmem.rows import Client, Connection, Row, fetch_all, fetch_one

__all__ = ["Task", "resume_task", "start_task"]


class Task:
    """One task of the memory's tenant, by id."""

    def __init__(self, memory: Client, task_id: int) -> None:
        self.memory = memory
        self.task_id = task_id

    def __repr__(self) -> str:
        return f"Task({self.task_id})"

    def state(self, *, conn: Connection | None = None) -> Row:
        """Goal, plan, current step, status, variables, retries, expiry, the recorded
        steps and the last completed one (``pgmem.task_state``)."""

        with self.memory.transaction(conn) as c:
            rows = fetch_all(c, lq.TASK_STATE, {"task_id": self.task_id})
        if not rows:
            raise LookupError(f"unknown task id: {self.task_id}")
        return rows[0]

    def update(
        self,
        *,
        status: str | None = None,
        variables: Mapping[str, Any] | None = None,
        plan: list[str] | None = None,
        current_step: int | None = None,
        conn: Connection | None = None,
    ) -> None:
        """Change status (planning, running, waiting_for_confirmation), merge variables,
        replace the plan or move the current step (``pgmem.set_task``)."""

        params = {
            "task_id": self.task_id,
            "status": status,
            "variables": ingest.as_jsonb(dict(variables)) if variables is not None else None,
            "plan": ingest.as_jsonb(plan) if plan is not None else None,
            "current_step": current_step,
        }
        with self.memory.transaction(conn) as c:
            fetch_all(c, lq.SET_TASK, params)

    def record(
        self,
        step: int,
        *,
        observation: str | None = None,
        result: Any = None,
        variables: Mapping[str, Any] | None = None,
        conn: Connection | None = None,
    ) -> Row:
        """Record that ``step`` completed (``pgmem.record_step``); recording it again
        returns ``recorded: False`` and changes nothing."""

        params = {
            "task_id": self.task_id,
            "step": step,
            "observation": observation,
            "result": ingest.as_jsonb(result) if result is not None else None,
            "variables": ingest.as_jsonb(dict(variables)) if variables is not None else None,
        }
        with self.memory.transaction(conn) as c:
            return fetch_one(c, lq.RECORD_STEP, params)

    def fail(self, step: int, error: str, *, conn: Connection | None = None) -> Row:
        """Count a failed attempt at ``step``; past ``max_retries`` the task fails."""

        params = {"task_id": self.task_id, "step": step, "error": error}
        with self.memory.transaction(conn) as c:
            return fetch_one(c, lq.FAIL_STEP, params)

    def finish(
        self,
        outcome: str | None = None,
        *,
        status: str = "done",
        learned_rule: str | None = None,
        conn: Connection | None = None,
    ) -> Row:
        """End the task (done, failed or cancelled): clears its scratch state and
        distils it into long-term memory; returns ``memory_id`` (the episode) and
        ``procedure_id`` (the learned rule, if any)."""

        params = {
            "task_id": self.task_id,
            "status": status,
            "outcome": outcome,
            "learned_rule": learned_rule,
        }
        with self.memory.transaction(conn) as c:
            return fetch_one(c, lq.FINISH_TASK, params)


def start_task(
    client: Client,
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
    """``pgmem.start_task`` through ``client``: :meth:`pgmem.client.Memory.start_task`."""
    params = {
        "subject": user_id,
        "goal": goal,
        "plan": ingest.as_jsonb(list(plan)),
        "session_id": session_id,
        "variables": ingest.as_jsonb(dict(variables or {})),
        "status": status,
        "max_retries": max_retries,
        "ttl": ttl,
    }
    with client._call(conn) as c:
        return Task(client, int(fetch_one(c, lq.START_TASK, params)["task_id"]))


def resume_task(
    client: Client, user_id: str, session_id: str | None = None, *, conn: Connection | None = None
) -> Task | None:
    """``pgmem.resume_task`` through ``client``: :meth:`pgmem.client.Memory.resume_task`."""
    params = {"subject": user_id, "session_id": session_id}
    with client._call(conn) as c:
        rows = fetch_all(c, lq.RESUME_TASK, params)
    return Task(client, int(rows[0]["task_id"])) if rows else None
