"""Short-term memory of one conversation: :class:`Session`, from :meth:`Memory.session`.

A thin handle over the SQL functions of ``sql/functions/70_session.sql`` and
``74_prompt.sql``::

    with Memory(tenant="acme") as memory:
        chat = memory.session("chat-42", user_id="alice")
        chat.append("user", "I fly to Paris on 12 May")   # also queued for long-term memory
        chat.append("assistant", "Noted: Paris, 12 May.")
        chat.window()        # the turns a prompt shows verbatim
        chat.summary()       # the rolling summary of older turns (the worker writes it)
        chat.prompt("travel plans?", token_budget=2000)  # task + summary + window + long-term
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pgmem import ingest
from pgmem.queries import layers as lq
from pgmem.rows import Client, Connection, PromptText, Row, Rows, fetch_all, fetch_one
from pgmem.task import Task, resume_task, start_task

__all__ = ["Session"]


class Session:
    """One conversation (``session_id``) about ``user_id``, in the memory's tenant."""

    def __init__(self, memory: Client, session_id: str, user_id: str) -> None:
        self.memory = memory
        self.session_id = session_id
        self.user_id = user_id

    def __repr__(self) -> str:
        return f"Session({self.session_id!r}, user_id={self.user_id!r})"

    def _key(self) -> dict[str, Any]:
        return {"subject": self.user_id, "session_id": self.session_id}

    def append(
        self,
        role: str,
        content: str,
        *,
        protected: bool = False,
        metadata: Mapping[str, Any] | None = None,
        extract: bool = True,
        agent_id: str | None = None,
        conn: Connection | None = None,
    ) -> Row:
        """Append a turn (``pgmem.append_message``); a user turn is also queued for
        extraction into long-term memory unless ``extract=False``. Returns ``seq`` and
        ``inbox_id`` (None when nothing was queued)."""

        params = self._key() | {
            "role": role,
            "content": content,
            "protected": protected,
            "metadata": ingest.as_jsonb(dict(metadata or {})),
            "extract": extract,
            "agent_id": agent_id,
        }
        with self.memory.transaction(conn) as c:
            return fetch_one(c, lq.APPEND_MESSAGE, params)

    def extend(
        self, messages: Sequence[Mapping[str, Any]], *, conn: Connection | None = None
    ) -> Rows:
        """Append several ``{"role", "content"[, "protected"]}`` turns in one transaction."""
        with self.memory.transaction(conn) as c:
            return [
                self.append(
                    str(m["role"]),
                    str(m["content"]),
                    protected=bool(m.get("protected", False)),
                    conn=c,
                )
                for m in messages
            ]

    def window(
        self,
        *,
        turns: int | None = None,
        tokens: int | None = None,
        strategy: str | None = None,
        conn: Connection | None = None,
    ) -> Rows:
        """The turns a prompt shows verbatim (``pgmem.session_window``), oldest first;
        caps and strategy default to the tenant's settings."""

        params = self._key() | {"turns": turns, "tokens": tokens, "strategy": strategy}
        with self.memory.transaction(conn) as c:
            return fetch_all(c, lq.SESSION_WINDOW, params)

    def summary(self, *, version: int | None = None, conn: Connection | None = None) -> Row | None:
        """The latest rolling summary (or ``version``) with its turn range; None before
        the first fold."""

        with self.memory.transaction(conn) as c:
            rows = fetch_all(c, lq.SESSION_SUMMARY, self._key() | {"version": version})
        return rows[0] if rows else None

    def close(self, *, conn: Connection | None = None) -> bool:
        """Close the session (its turns are purged after the tenant's retention)."""

        with self.memory.transaction(conn) as c:
            return bool(fetch_one(c, lq.CLOSE_SESSION, self._key())["closed"])

    def prompt(
        self,
        query: str | None = None,
        *,
        token_budget: int = 4000,
        reinforce: bool = True,
        conn: Connection | None = None,
    ) -> PromptText:
        """The whole memory for the next LLM call (``pgmem.prompt``): the open task,
        the summary, the window and the long-term memories relevant to ``query``, each
        section labelled, within ``token_budget`` estimated tokens. ``degraded`` when
        the embedder failed and long-term memories were found by full text alone."""

        embedding, degraded = self.memory._query_vector(query)
        params = self._key() | {
            "query": query,
            "embedding": embedding,
            "token_budget": token_budget,
            "reinforce": reinforce,
        }
        with self.memory.transaction(conn) as c:
            text = str(fetch_one(c, lq.PROMPT, params)["prompt"] or "")
        return PromptText(text, degraded_reason=degraded)

    def start_task(self, goal: str, plan: Sequence[str], **options: Any) -> Task:
        """Start a task of this session (see :meth:`Memory.start_task`)."""
        return start_task(
            self.memory, self.user_id, goal, plan, session_id=self.session_id, **options
        )

    def resume_task(self, *, conn: Connection | None = None) -> Task | None:
        """The latest unfinished task of this session, to continue after a crash."""
        return resume_task(self.memory, self.user_id, self.session_id, conn=conn)
