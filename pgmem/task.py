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

from collections.abc import Mapping
from typing import Any

from pgmem.client import Connection, Memory, Row, _jsonb, _one, _rows
from pgmem.queries import layers as lq

__all__ = ["Task"]


class Task:
    """One task of the memory's tenant, by id."""

    def __init__(self, memory: Memory, task_id: int) -> None:
        self.memory = memory
        self.task_id = task_id

    def __repr__(self) -> str:
        return f"Task({self.task_id})"

    def state(self, *, conn: Connection | None = None) -> Row:
        """Goal, plan, current step, status, variables, retries, expiry, the recorded
        steps and the last completed one (``pgmem.task_state``)."""

        with self.memory.transaction(conn) as c:
            rows = _rows(c, lq.TASK_STATE, {"task_id": self.task_id})
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
            "variables": _jsonb(dict(variables)) if variables is not None else None,
            "plan": _jsonb(plan) if plan is not None else None,
            "current_step": current_step,
        }
        with self.memory.transaction(conn) as c:
            _rows(c, lq.SET_TASK, params)

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
            "result": _jsonb(result) if result is not None else None,
            "variables": _jsonb(dict(variables)) if variables is not None else None,
        }
        with self.memory.transaction(conn) as c:
            return _one(c, lq.RECORD_STEP, params)

    def fail(self, step: int, error: str, *, conn: Connection | None = None) -> Row:
        """Count a failed attempt at ``step``; past ``max_retries`` the task fails."""

        params = {"task_id": self.task_id, "step": step, "error": error}
        with self.memory.transaction(conn) as c:
            return _one(c, lq.FAIL_STEP, params)

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
            return _one(c, lq.FINISH_TASK, params)
