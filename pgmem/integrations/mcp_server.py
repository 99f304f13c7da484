"""``pgmem mcp``: pgmem's memory as Model Context Protocol tools (extra ``mcp``).

Built on the official ``mcp`` SDK (:class:`mcp.server.mcpserver.MCPServer`). Every tool
is a thin call of :class:`pgmem.Memory`, so deduplication, supersession, scoring,
decay and tenant isolation stay in the ``pgmem.*`` SQL functions.

Identity. The server acts for exactly one tenant, fixed when it starts: either the
DSN's role is that tenant's login role, or it is a ``pgmem_service`` member and
``tenant`` names the tenant (bound with ``pgmem.set_tenant`` in every transaction).
:func:`bind` refuses to start without one. No tool takes a tenant argument, and a
memory id of another tenant is simply unknown (PM022) under row-level security. The
subject (whose memories) is the ``user`` argument of each call, or fixed by
``subject``; a fixed subject also confines the id-based tools to that subject's
memories.

Errors. Anything the database refuses comes back as an MCP tool error (``is_error``)
whose text carries the message, the PM code and the hint; the server keeps running.
Result sizes are bounded by the schemas (``k``, ``limit``, ``token_budget``).

Tool groups, one per memory layer: :data:`LONG_TERM_TOOLS` (facts, preferences,
episodes: ``pgmem.memories``), :data:`SESSION_TOOLS` (short-term: a conversation's
turns, window, rolling summary and the prompt assembled from every layer) and
:data:`TASK_TOOLS` (working memory: a task's goal, plan, steps and outcome).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias, get_args

import anyio
import psycopg
import pydantic_core
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import CallToolResult, ContentBlock, TextContent, ToolAnnotations
from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, ValidationError

from pgmem import __version__
from pgmem.client import Memory, MemoryNotFound, TenantError, _message
from pgmem.embed import EmbeddingError
from pgmem.extract import KINDS, LLMError
from pgmem.queries import integrations as queries
from pgmem.rows import PromptText, Results, Row, fetch_all, fetch_one
from pgmem.task import Task

__all__ = [
    "LONG_TERM_TOOLS",
    "SESSION_TOOLS",
    "TASK_TOOLS",
    "Binding",
    "StartupError",
    "bind",
    "build_server",
]

# Bounds an agent cannot talk its way past: a tool result stays a few pages of text.
MAX_K = 50  # recall hits per call
MAX_LIST = 100  # list_memories rows per call (pages with offset)
MAX_TOKEN_BUDGET = 8000  # context block, in pgmem.context's estimated tokens
MAX_HOPS = 3  # ripple over memory_links; pgmem.recall allows 0..3
MAX_WINDOW_TURNS = 200  # session_window turns per call
MAX_PLAN_STEPS = 50  # steps in a task plan
# The engine's own limits (pgmem.settings' defaults; a tenant's come from bind()): a
# memory's text (max_content_bytes) and a session turn (max_turn_bytes). A schema
# counts characters, the engine bytes: a text within the schema's length that is
# over in bytes is refused (PM012) before it is embedded.
MAX_TEXT = 16384
MAX_TURN = 65536
MAX_QUERY = 4096  # characters of a recall, context or prompt query: a question, not a file
MAX_ID = 2**63 - 1  # ids are PostgreSQL bigints

Kind: TypeAlias = Literal["episodic", "semantic", "preference", "procedural"]
assert set(KINDS) == set(get_args(Kind))  # the schema's enum is the engine's list

MemoryId = Annotated[
    int, Field(ge=1, le=MAX_ID, description="Memory id, as returned by recall or list.")
]
TaskId = Annotated[
    int, Field(ge=1, le=MAX_ID, description="Task id, from start_task or resume_task.")
]
OptionalSessionId = Annotated[
    str | None, Field(min_length=1, max_length=256, description="Conversation (session) id.")
]
SessionId = Annotated[
    str, Field(min_length=1, max_length=256, description="Conversation (session) id.")
]
User = Annotated[
    str | None,
    Field(
        description=(
            "Whose memories: the subject (user) id. Required unless the server was "
            "started with a fixed subject, which it must then equal."
        ),
        max_length=256,
    ),
]
Kinds = Annotated[
    list[Kind] | None,
    Field(description="Only these kinds of memory (default: every kind)."),
]
# What `user` is when the server serves any subject: required, and only then in the
# schemas (with a fixed subject the tools take none; see _as_served).
RequiredUser = Annotated[
    str,
    Field(
        description="Whose memories: the subject (user) id.",
        min_length=1,
        max_length=256,
        pattern=r"\S",
    ),
]


Metadata = Annotated[
    dict[str, Annotated[str | int | float | bool, Field()]] | None,
    Field(
        description=(
            'Tags kept with the memory, e.g. {"project": "apollo"}; recall filters by them.'
        ),
        max_length=32,
    ),
]
AgentId = Annotated[
    str | None,
    Field(description="Which agent wrote it (recall can keep to one agent).", max_length=256),
]
SharedUsers = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=256)]] | None,
    Field(
        description=(
            "Other subjects of the tenant (a team, a project) to recall from too, read-only."
        ),
        max_length=16,
    ),
]


class Message(BaseModel):
    """One message of a conversation turn."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"]
    content: Annotated[str, Field(min_length=1, max_length=MAX_TURN, pattern=r"\S")]


INSTRUCTIONS = """\
Long-term memory of the user, kept in PostgreSQL by pgmem.
- Before answering, call `context` (a prompt block under a token budget) or `recall`
  (ranked memories with ids and scores) with what the user asked.
- When the user tells you something worth keeping, call `remember` with their words:
  pgmem extracts the facts, merges duplicates and lets a new fact supersede an old one.
- When a memory is wrong, correct it with `update` (keeps the history) or remove it
  with `forget`; `pin` what must never fade. `history` shows every change of a memory.
- `profile` shows the core facts every prompt carries; `profile_add` adds one,
  `profile_remove` takes one out.
- In a conversation, `append_turn` each turn and call `prompt` for the whole memory
  (task, summary, recent turns, long-term facts) under one budget.
- For multi-step work, `start_task` with a plan, `record_step` as steps complete,
  `finish_task` at the end; after a restart, `resume_task` says where you were.
- `health` says whether memory works now; `job_status` where a queued turn stands;
  `list_users` and `list_sessions` show whose memories and conversations there are;
  `entities` what the user's facts name, `related` how a memory links to others;
  `erase_user` removes a user for good.
"""


class StartupError(RuntimeError):
    """The server cannot act for a tenant; the message says how to configure one."""


@dataclass
class Binding:
    """What every tool call acts with: one client, one tenant, maybe one subject."""

    memory: Memory
    tenant: str
    subject: str | None = None
    # One connection serves every call; the SDK runs sync tools in worker threads.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fixed(self) -> str | None:
        """The one subject this call may reach: the server's (``--user``), or the one
        the request's bearer token was made for; None: any."""
        if self.subject is not None:
            return self.subject
        token = get_access_token()
        return token.subject if token is not None else None

    def user(self, user: str | None) -> str:
        """The subject of a call: the argument, or the fixed one (never both differing)."""
        fixed = self.fixed()
        if fixed is not None:
            if user is not None and user != fixed:
                raise ToolError(
                    f"this connection serves the memories of {fixed!r} only; pass that `user`"
                )
            return fixed
        if user is None or not user.strip():
            raise ToolError("`user` is required: whose memories (the subject id)")
        return user

    def shared(self, users: Sequence[str] | None) -> list[str] | None:
        """Shared subjects to read beside the user's: none past a fixed subject."""
        if users and self.fixed() is not None:
            raise ToolError(
                f"this connection serves the memories of {self.fixed()!r} only; omit `shared_users`"
            )
        return list(users) if users else None

    def owned(self, memory_id: int) -> None:
        """With a fixed subject, ids of the tenant's other subjects are unknown too."""
        fixed = self.fixed()
        if fixed is None:
            return
        row = self.memory.get(memory_id)
        if row is None or row["subject"] != fixed:
            raise MemoryNotFound(memory_id)

    def task(self, task_id: int) -> Task:
        """A task handle; with a fixed subject, other subjects' tasks are unknown."""
        task = self.memory.task(task_id)
        fixed = self.fixed()
        if fixed is not None and task.state()["subject"] != fixed:
            raise LookupError(f"unknown task id: {task_id}")
        return task

    @contextmanager
    def call(self) -> Iterator[None]:
        """Serialize use of the connection and turn every failure into a tool error."""
        with self.lock, tool_errors():
            yield


# The SQL functions a database hint may name, and the tool that does the same: an
# agent calls tools, not SQL. A hint naming a function no tool calls is left out.
SQL_TOOLS = {
    "remember": "remember",
    "remember_many": "remember",
    "recall": "recall",
    "context": "context",
    "list_memories": "list_memories",
    "get_memory": "list_memories",
    "update_memory": "update",
    "forget": "forget",
    "pin": "pin",
    "unpin": "unpin",
    "history": "history",
    "profile": "profile",
    "set_profile": "profile_remove",
    "append_message": "append_turn",
    "session_window": "session_window",
    "session_summary": "session_summary",
    "prompt": "prompt",
    "start_task": "start_task",
    "set_task": "start_task",
    "resume_task": "resume_task",
    "task_state": "task_state",
    "record_step": "record_step",
    "fail_step": "fail_step",
    "finish_task": "finish_task",
}
_SQL_NAME = re.compile(r"pgmem\.([a-z_]+)(?:\(\))?")


def _tool_hint(hint: str) -> str | None:
    """A database hint in tools' words, or None when it names SQL no tool offers."""
    names = _SQL_NAME.findall(hint)
    if any(name not in SQL_TOOLS for name in names):
        return None
    return _SQL_NAME.sub(lambda m: f"the `{SQL_TOOLS[m[1]]}` tool", hint)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _argument_errors(tool: str, exc: ValidationError) -> str:
    """A refusal of a call's arguments in one line: each bad argument, what is wrong
    with it and what was given, no pydantic dump."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden":
            parts.append(f"unknown argument `{where}`")
        elif error["type"] == "missing":
            parts.append(f"`{where}` is required")
        elif error["type"] == "string_pattern_mismatch":  # the only pattern: not blank
            parts.append(f"`{where}` must not be blank")
        else:
            parts.append(f"`{where}`: {error['msg']} (got {_short(error.get('input'))})")
    return (
        f"invalid arguments for {tool}: {'; '.join(parts)} "
        f"(hint: tools/list gives the input schema of {tool})"
    )


class _CheckedTool(Tool):
    """A tool whose arguments are checked first, a refusal said in one line."""

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(_argument_errors(self.name, exc)) from exc
        return await super().run(arguments, context, convert_result)


def _as_served(fn: Callable[..., Any], binding: Binding) -> Callable[..., Any]:
    """The tool's signature as this server serves it: with a fixed subject no `user`
    argument at all; otherwise a required one. Its schema then says the truth."""
    signature = inspect.signature(fn, eval_str=True)
    if "user" not in signature.parameters:
        return fn
    parameters = []
    for parameter in signature.parameters.values():
        if parameter.name == "user":
            if binding.subject is not None:
                continue
            parameter = parameter.replace(annotation=RequiredUser, default=inspect.Parameter.empty)
        # Keyword-only: a required `user` may then follow optional arguments.
        parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY))
    fn.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return fn


def _tool(fn: Callable[..., Any], binding: Binding, hints: ToolAnnotations) -> Tool:
    tool = _CheckedTool.from_function(
        _as_served(fn, binding), annotations=hints, structured_output=True
    )
    # Unknown arguments are refused, not ignored, and the schema says so.
    loose = tool.fn_metadata.arg_model
    strict: type[ArgModelBase] = type(
        loose.__name__,
        (loose,),
        {"model_config": ConfigDict(**loose.model_config, extra="forbid"), "__module__": __name__},
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


@contextmanager
def tool_errors() -> Iterator[None]:
    """Database refusals as tool errors with the PM code and hint, never a crash."""
    try:
        yield
    except ToolError:
        raise
    except MemoryNotFound as exc:
        raise ToolError(f"{exc} [PM022] (hint: recall or list_memories shows valid ids)") from exc
    except LookupError as exc:  # Task.state: no such task for this tenant
        raise ToolError(f"{exc} (hint: start_task or resume_task gives a task id)") from exc
    except psycopg.Error as exc:
        code = f" [{exc.sqlstate}]" if exc.sqlstate else ""
        primary = exc.diag.message_primary or _message(exc).partition(" (hint: ")[0]
        hint = _tool_hint(exc.diag.message_hint) if exc.diag.message_hint else None
        raise ToolError(f"{primary}{code}" + (f" (hint: {hint})" if hint else "")) from exc
    except (TenantError, EmbeddingError, LLMError, ValueError) as exc:
        raise ToolError(str(exc)) from exc


def bind(memory: Memory, *, subject: str | None = None) -> Binding:
    """Check that ``memory`` acts for a tenant and return the binding, or refuse.

    ``memory.tenant`` is bound with ``pgmem.set_tenant`` (a ``pgmem_service`` DSN),
    or ``None`` for a tenant's login role, which is bound by its login.
    """
    try:
        with memory.transaction() as conn:
            tenant = fetch_one(conn, queries.CURRENT_TENANT, {})["tenant"]
    except (psycopg.Error, TenantError) as exc:
        text = _message(exc) if isinstance(exc, psycopg.Error) else str(exc)
        raise StartupError(f"cannot act for a tenant: {text}") from exc
    if tenant is None:
        raise StartupError(
            "no tenant is bound: connect as a tenant's login role "
            "(`pgmem tenant create NAME --login`), or pass --tenant NAME (PGMEM_TENANT) "
            "with a DSN whose role is a pgmem_service member"
        )
    if subject is not None and not subject.strip():
        raise StartupError("--user must not be blank")
    return Binding(memory, tenant, subject)


# ------------------------------------------------------------------ long-term tools


def _remember(b: Binding) -> Callable[..., list[Row]]:
    def remember(
        text: Annotated[
            str | None,
            Field(
                description=(
                    f"What was said or learned, in the user's words (at most {MAX_TEXT} bytes)."
                ),
                min_length=1,
                max_length=MAX_TEXT,
                pattern=r"\S",
            ),
        ] = None,
        messages: Annotated[
            list[Message] | None,
            Field(
                description=(
                    'A conversation turn: [{"role": "user"|"assistant", "content": …}], '
                    f"at most {MAX_TURN} characters of content in all."
                ),
                min_length=1,
                max_length=200,
            ),
        ] = None,
        user: User = None,
        session_id: OptionalSessionId = None,
        infer: Annotated[
            bool,
            Field(
                description=(
                    "True (default): extract facts from the text. False: store the text "
                    "as one memory exactly as written."
                )
            ),
        ] = True,
        kind: Annotated[Kind | None, Field(description="Kind, only with infer=false.")] = None,
        importance: Annotated[
            float | None, Field(ge=0, le=1, description="0..1, only with infer=false.")
        ] = None,
        metadata: Metadata = None,
        agent_id: AgentId = None,
    ) -> list[Row]:
        """Remember what the user said. Returns one row per fact with the action pgmem
        took: inserted, reinforced (already known), superseded (replaced an older fact
        with the same subject and predicate), deduplicated, merge_pending, outdated or
        rejected (prompt injection), and the memory_id concerned."""
        if (text is None) == (messages is None):
            raise ToolError("give exactly one of `text` or `messages`")
        if messages is not None and sum(len(m.content) for m in messages) > MAX_TURN:
            raise ToolError(
                f"messages hold more than {MAX_TURN} characters: remember a turn at a time"
            )
        with b.call():
            return b.memory.add(
                text if text is not None else [m.model_dump() for m in messages or []],
                b.user(user),
                session_id=session_id,
                infer=infer,
                kind=kind if not infer else None,
                importance=importance if not infer else None,
                metadata=metadata,
                agent_id=agent_id,
            )

    return remember


def _answer(value: Results | PromptText) -> CallToolResult:
    """What a read tool returns: the rows or text as ever, and when the embedder failed
    a first text block an agent reads saying so, with ``pgmem/degraded`` and
    ``pgmem/degraded_reason`` in the result's ``_meta`` for the application."""
    if isinstance(value, str):
        content: list[ContentBlock] = [TextContent(type="text", text=str(value))]
        structured: Any = {"result": str(value)}
    else:
        rows = pydantic_core.to_jsonable_python(list(value), fallback=str)
        content = [
            TextContent(type="text", text=pydantic_core.to_json(row, indent=2).decode())
            for row in rows
        ]
        structured = {"result": rows}
    if not value.degraded:
        return CallToolResult(content=content, structured_content=structured)
    note = f"degraded: {value.degraded_reason}"
    result = CallToolResult(
        content=[TextContent(type="text", text=note), *content],
        structured_content=structured,
    )
    result.meta = {"pgmem/degraded": True, "pgmem/degraded_reason": value.degraded_reason}
    return result


def _recall(b: Binding) -> Callable[..., CallToolResult]:
    def recall(
        query: Annotated[
            str, Field(description="What to recall, in natural language.", max_length=MAX_QUERY)
        ],
        user: User = None,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many memories.")] = 10,
        kinds: Kinds = None,
        since: Annotated[
            datetime | None, Field(description="Only memories valid since (ISO 8601).")
        ] = None,
        until: Annotated[
            datetime | None, Field(description="Only memories valid until (ISO 8601).")
        ] = None,
        as_of: Annotated[
            datetime | None, Field(description="Answer as memory stood at this time.")
        ] = None,
        hops: Annotated[
            int, Field(ge=0, le=MAX_HOPS, description="Also follow links between memories.")
        ] = 0,
        session_id: Annotated[
            str | None, Field(description="Only this conversation.", max_length=256)
        ] = None,
        metadata: Annotated[
            dict[str, Annotated[str | int | float | bool, Field()]] | None,
            Field(description="Only memories whose metadata holds these keys and values (tags)."),
        ] = None,
        agent_id: Annotated[
            str | None, Field(description="Only what this agent wrote.", max_length=256)
        ] = None,
        shared_users: SharedUsers = None,
    ) -> Annotated[CallToolResult, list[Row]]:
        """Ranked memories of the user that answer `query`, best first, with memory_id,
        content, kind, dates and the score parts (relevance, importance, recency).
        Marked degraded when the embedder failed and words alone ranked them."""
        with b.call():
            return _answer(
                b.memory.search(
                    query,
                    b.user(user),
                    k,
                    kinds=kinds,
                    since=since,
                    until=until,
                    as_of=as_of,
                    hops=hops,
                    session_id=session_id,
                    filters=metadata,
                    agent_id=agent_id,
                    shared_subjects=b.shared(shared_users),
                )
            )

    return recall


def _context(b: Binding) -> Callable[..., CallToolResult]:
    def context(
        query: Annotated[
            str, Field(description="What the next answer is about.", max_length=MAX_QUERY)
        ],
        user: User = None,
        token_budget: Annotated[
            int,
            Field(ge=1, le=MAX_TOKEN_BUDGET, description="Size limit of the block, in tokens."),
        ] = 500,
        kinds: Kinds = None,
        hops: Annotated[int, Field(ge=0, le=MAX_HOPS)] = 0,
    ) -> Annotated[CallToolResult, str]:
        """A prompt block of what is known about the user for `query`: sections by
        kind, dated lines, most relevant first, within the token budget. Empty when
        nothing is known; marked degraded when the embedder failed."""
        with b.call():
            return _answer(
                b.memory.context(query, b.user(user), token_budget, kinds=kinds, hops=hops, k=MAX_K)
            )

    return context


def _list_memories(b: Binding) -> Callable[..., list[Row]]:
    def list_memories(
        user: User = None,
        kinds: Kinds = None,
        status: Annotated[
            Literal["active", "superseded", "merged", "archived", "deleted"] | None,
            Field(description="Only this status (default active); null: every status."),
        ] = "active",
        limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
        offset: Annotated[int, Field(ge=0, le=MAX_ID)] = 0,
    ) -> list[Row]:
        """The user's memories, newest first, without ranking (pages with offset)."""
        with b.call():
            return b.memory.get_all(
                b.user(user), kinds=kinds, status=status, limit=limit, offset=offset
            )

    return list_memories


def _update(b: Binding) -> Callable[..., Row]:
    def update(
        memory_id: MemoryId,
        content: Annotated[
            str | None, Field(description="The corrected text of the memory.", max_length=MAX_TEXT)
        ] = None,
        importance: Annotated[float | None, Field(ge=0, le=1)] = None,
        kind: Kind | None = None,
    ) -> Row:
        """Correct a memory you found wrong, in place: new content (re-embedded),
        importance or kind. The old text stays in its history."""
        if content is None and importance is None and kind is None:
            raise ToolError("nothing to update: give content, importance or kind")
        with b.call():
            b.owned(memory_id)
            return b.memory.update(memory_id, content, importance=importance, kind=kind)

    return update


def _forget(b: Binding) -> Callable[..., dict[str, Any]]:
    def forget(memory_id: MemoryId) -> dict[str, Any]:
        """Forget a memory (soft delete: its history is kept). `changed` is false when
        it was forgotten already."""
        with b.call():
            b.owned(memory_id)
            return {"memory_id": memory_id, "changed": b.memory.delete(memory_id)}

    return forget


def _pin(b: Binding) -> Callable[..., dict[str, Any]]:
    def pin(memory_id: MemoryId) -> dict[str, Any]:
        """Pin a memory: it never decays and is never archived or evicted."""
        with b.call():
            b.owned(memory_id)
            return {"memory_id": memory_id, "changed": b.memory.pin(memory_id)}

    return pin


def _unpin(b: Binding) -> Callable[..., dict[str, Any]]:
    def unpin(memory_id: MemoryId) -> dict[str, Any]:
        """Unpin a memory: it decays and can be archived like any other again."""
        with b.call():
            b.owned(memory_id)
            return {"memory_id": memory_id, "changed": b.memory.unpin(memory_id)}

    return unpin


def _profile(b: Binding) -> Callable[..., list[Row]]:
    def profile(user: User = None) -> list[Row]:
        """The user's core profile: the facts every `context` and `prompt` shows first,
        whatever the query (pinned memories, health and safety, identity, standing
        instructions, strong preferences), each with its reason."""
        with b.call():
            return b.memory.profile(b.user(user))

    return profile


def _profile_add(b: Binding) -> Callable[..., Row]:
    def profile_add(
        text: Annotated[
            str,
            Field(
                description="A fact that must be in every prompt, e.g. 'User is allergic to nuts'.",
                min_length=1,
                max_length=MAX_TEXT,
            ),
        ],
        user: User = None,
        kind: Annotated[Kind, Field(description="The memory's kind.")] = "semantic",
    ) -> Row:
        """Add a fact to the user's core profile (stored as written and pinned). To
        correct a profile fact, `update` it; to take one out, `profile_remove` it."""
        with b.call():
            try:
                return b.memory.add_to_profile(text, b.user(user), kind=kind)
            except ValueError as exc:
                raise ToolError(str(exc)) from exc

    return profile_add


def _profile_remove(b: Binding) -> Callable[..., dict[str, Any]]:
    def profile_remove(memory_id: MemoryId) -> dict[str, Any]:
        """Take a memory out of the core profile (it stays a memory; the engine will
        not select it for the profile again)."""
        with b.call():
            b.owned(memory_id)
            return {"memory_id": memory_id, "changed": b.memory.set_profile(memory_id, False)}

    return profile_remove


def _history(b: Binding) -> Callable[..., list[Row]]:
    def history(memory_id: MemoryId) -> list[Row]:
        """Every change of a memory, oldest first: insert, reinforce, supersede,
        update, pin, delete… with actor, time, old and new content."""
        with b.call():
            b.owned(memory_id)
            return b.memory.history(memory_id)

    return history


def _entities(b: Binding) -> Callable[..., list[Row]]:
    def entities(
        user: User = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
    ) -> list[Row]:
        """The people, places and things the user's facts name, most named first, each
        with its facts as triples (subject, predicate, object) and their memory ids."""
        with b.call():
            return b.memory.entities(b.user(user), limit=limit)

    return entities


def _related(b: Binding) -> Callable[..., list[Row]]:
    def related(memory_id: MemoryId) -> list[Row]:
        """How a memory is linked to others, both ways: derived_from (a fact and the
        turn it was said in), supersedes, merged_into, same_session, same_entity; with
        the other memory's content and status."""
        with b.call():
            b.owned(memory_id)
            return b.memory.links(memory_id)

    return related


def _erase_user(b: Binding) -> Callable[..., dict[str, Any]]:
    def erase_user(
        user: User = None,
        confirm: Annotated[
            bool, Field(description="Must be true: erasing cannot be undone.")
        ] = False,
    ) -> dict[str, Any]:
        """Erase everything about the user for good: memories, history, sessions, tasks
        and queued jobs (pgmem.erase_subject). One tombstone event without subject or
        content stays. Returns how many memories went."""
        if not confirm:
            raise ToolError("erasing cannot be undone: call again with confirm=true")
        with b.call():
            subject = b.user(user)
            return {"user": subject, "memories_erased": b.memory.erase_user(subject)}

    return erase_user


def _list_users(b: Binding) -> Callable[..., list[Row]]:
    def list_users(
        limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
        offset: Annotated[int, Field(ge=0, le=MAX_ID)] = 0,
    ) -> list[Row]:
        """The users (subjects) with memories, with their count of active memories and
        when they last changed, most recently changed first. With a fixed subject, that
        subject alone."""
        with b.call(), b.memory.transaction() as conn:
            return fetch_all(
                conn,
                queries.LIST_SUBJECTS,
                {"subject": b.fixed(), "limit": limit, "offset": offset},
            )

    return list_users


def _list_sessions(b: Binding) -> Callable[..., list[Row]]:
    def list_sessions(
        user: User = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIST)] = 20,
    ) -> list[Row]:
        """The user's conversations (sessions), most recently active first: id, status,
        turns, how far the summary reaches."""
        with b.call():
            return b.memory.sessions(b.user(user), limit=limit)

    return list_sessions


def _job_status(b: Binding) -> Callable[..., Row]:
    def job_status(
        inbox_id: Annotated[
            int, Field(ge=1, le=MAX_ID, description="The inbox_id append_turn returned.")
        ],
    ) -> Row:
        """Where a queued write stands: pending (the worker has not run it yet), done or
        failed (with its error and attempts)."""
        with b.call():
            with b.memory.transaction() as conn:
                rows = fetch_all(
                    conn, queries.JOB_STATUS, {"inbox_id": inbox_id, "subject": b.fixed()}
                )
            if not rows:
                raise ToolError(
                    f"unknown inbox_id: {inbox_id} (hint: the `append_turn` tool returns one)"
                )
            return rows[0]

    return job_status


def _health(b: Binding) -> Callable[..., dict[str, Any]]:
    def health() -> dict[str, Any]:
        """Whether memory works now: the database answers, which tenant this server acts
        for, whether an embedding model is in use, and the tenant's queued and failed
        jobs (a growing queue: the worker is not running)."""
        with b.call():
            with b.memory.transaction() as conn:
                queue = fetch_one(conn, queries.QUEUE_HEALTH, {})
            return {
                "database": "ok",
                "tenant": b.tenant,
                "user": b.fixed(),
                "embedder": b.memory._model() or "none (text recall)",
                **queue,
                "version": __version__,
            }

    return health


# --------------------------------------------------------- short-term (sessions)


def _append_turn(b: Binding) -> Callable[..., Row]:
    def append_turn(
        session_id: SessionId,
        role: Literal["system", "user", "assistant", "tool"],
        content: Annotated[str, Field(min_length=1, max_length=MAX_TURN, pattern=r"\S")],
        user: User = None,
        protected: Annotated[
            bool, Field(description="Never cut from the window (e.g. instructions).")
        ] = False,
        extract: Annotated[
            bool, Field(description="Queue a user turn for fact extraction (default true).")
        ] = True,
    ) -> Row:
        """Append one turn to a conversation's short-term memory. Returns its `seq` and,
        for a user turn, the `inbox_id` of the job that extracts its facts into
        long-term memory."""
        with b.call():
            chat = b.memory.session(session_id, b.user(user))
            return chat.append(role, content, protected=protected, extract=extract)

    return append_turn


def _session_window(b: Binding) -> Callable[..., list[Row]]:
    def session_window(
        session_id: SessionId,
        user: User = None,
        turns: Annotated[int | None, Field(ge=1, le=MAX_WINDOW_TURNS)] = None,
        tokens: Annotated[int | None, Field(ge=1, le=MAX_TOKEN_BUDGET)] = None,
    ) -> list[Row]:
        """The recent turns of a conversation shown verbatim, oldest first (system and
        protected turns always). Caps default to the tenant's settings."""
        with b.call():
            return b.memory.session(session_id, b.user(user)).window(turns=turns, tokens=tokens)

    return session_window


def _session_summary(b: Binding) -> Callable[..., Row | None]:
    def session_summary(session_id: SessionId, user: User = None) -> Row | None:
        """The rolling summary of what left the conversation's window, with the turns
        it covers; null before the first summary."""
        with b.call():
            return b.memory.session(session_id, b.user(user)).summary()

    return session_summary


def _prompt(b: Binding) -> Callable[..., CallToolResult]:
    def prompt(
        session_id: SessionId,
        query: Annotated[
            str | None,
            Field(
                description="What the next answer is about (for long-term recall).",
                max_length=MAX_QUERY,
            ),
        ] = None,
        user: User = None,
        token_budget: Annotated[int, Field(ge=1, le=MAX_TOKEN_BUDGET)] = 2000,
    ) -> Annotated[CallToolResult, str]:
        """The whole memory for the next answer, in labelled sections under one token
        budget: the open task, the conversation summary, the recent turns and the
        long-term memories relevant to `query`; marked degraded when the embedder
        failed."""
        with b.call():
            chat = b.memory.session(session_id, b.user(user))
            return _answer(chat.prompt(query, token_budget=token_budget))

    return prompt


# ------------------------------------------------------------- working (tasks)


def _start_task(b: Binding) -> Callable[..., Row]:
    def start_task(
        goal: Annotated[str, Field(min_length=1, max_length=4096)],
        plan: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=4096)]],
            Field(min_length=1, max_length=MAX_PLAN_STEPS, description="The steps, in order."),
        ],
        user: User = None,
        session_id: Annotated[
            str | None, Field(description="Conversation it belongs to.", max_length=256)
        ] = None,
    ) -> Row:
        """Start a task: its goal and plan are kept in working memory, so the work
        survives a crash (see resume_task). Returns the task's state with its task_id."""
        with b.call():
            task = b.memory.start_task(b.user(user), goal, plan, session_id=session_id)
            return task.state()

    return start_task


def _resume_task(b: Binding) -> Callable[..., Row | None]:
    def resume_task(
        user: User = None,
        session_id: Annotated[
            str | None, Field(description="Only this conversation.", max_length=256)
        ] = None,
    ) -> Row | None:
        """The latest unfinished task of the user (or of a conversation), with its plan,
        current step and recorded steps; null when there is none."""
        with b.call():
            task = b.memory.resume_task(b.user(user), session_id)
            return None if task is None else task.state()

    return resume_task


def _task_state(b: Binding) -> Callable[..., Row]:
    def task_state(task_id: TaskId) -> Row:
        """A task's goal, plan, current step, status, variables and recorded steps."""
        with b.call():
            return b.task(task_id).state()

    return task_state


def _record_step(b: Binding) -> Callable[..., Row]:
    def record_step(
        task_id: TaskId,
        step: Annotated[int, Field(ge=1, description="The plan step that completed (from 1).")],
        observation: Annotated[str | None, Field(max_length=16384)] = None,
        variables: Annotated[
            dict[str, Any] | None, Field(description="Merged into the task's variables.")
        ] = None,
    ) -> Row:
        """Record that a step completed. Idempotent: recording it again returns
        `recorded: false` and changes nothing."""
        with b.call():
            return b.task(task_id).record(step, observation=observation, variables=variables)

    return record_step


def _fail_step(b: Binding) -> Callable[..., Row]:
    def fail_step(
        task_id: TaskId,
        step: Annotated[int, Field(ge=1)],
        error: Annotated[str, Field(min_length=1, max_length=16384)],
    ) -> Row:
        """Count a failed attempt at a step; past the retry limit the task fails."""
        with b.call():
            return b.task(task_id).fail(step, error)

    return fail_step


def _finish_task(b: Binding) -> Callable[..., Row]:
    def finish_task(
        task_id: TaskId,
        outcome: Annotated[str | None, Field(max_length=16384)] = None,
        status: Literal["done", "failed", "cancelled"] = "done",
        learned_rule: Annotated[
            str | None,
            Field(description="A rule worth keeping for next time (stored as a procedure)."),
        ] = None,
    ) -> Row:
        """End a task: its scratch state is cleared and it is distilled into long-term
        memory. Returns memory_id (the episode) and procedure_id (the learned rule)."""
        with b.call():
            return b.task(task_id).finish(outcome, status=status, learned_rule=learned_rule)

    return finish_task


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(destructive_hint=False, open_world_hint=False)
EDITS = ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False)

# (factory, annotations): the long-term layer, in the order clients list them.
LONG_TERM_TOOLS: Sequence[tuple[Callable[[Binding], Callable[..., Any]], ToolAnnotations]] = (
    (_remember, WRITES),
    (_recall, READ_ONLY),
    (_context, READ_ONLY),
    (_list_memories, READ_ONLY),
    (_update, EDITS),
    (_forget, EDITS),
    (_pin, EDITS),
    (_unpin, EDITS),
    (_history, READ_ONLY),
    (_profile, READ_ONLY),
    (_profile_add, WRITES),
    (_profile_remove, EDITS),
    (_entities, READ_ONLY),
    (_related, READ_ONLY),
    (_erase_user, ToolAnnotations(destructive_hint=True, open_world_hint=False)),
    (_list_users, READ_ONLY),
    (_job_status, READ_ONLY),
    (_health, READ_ONLY),
)
SESSION_TOOLS: Sequence[tuple[Callable[[Binding], Callable[..., Any]], ToolAnnotations]] = (
    (_append_turn, WRITES),
    (_session_window, READ_ONLY),
    (_session_summary, READ_ONLY),
    (_prompt, READ_ONLY),
    (_list_sessions, READ_ONLY),
)
TASK_TOOLS: Sequence[tuple[Callable[[Binding], Callable[..., Any]], ToolAnnotations]] = (
    (_start_task, WRITES),
    (_resume_task, READ_ONLY),
    (_task_state, READ_ONLY),
    (_record_step, WRITES),
    (_fail_step, WRITES),
    (_finish_task, EDITS),
)


def _follow_changes(
    watcher: Memory,
    subject: str | None,
    bus: InMemorySubscriptionBus,
    loop: asyncio.AbstractEventLoop,
    stop: threading.Event,
) -> None:
    """Publish ``pgmem://memories/{user}`` as updated whenever that user's memories
    change (the tenant's change stream, from now on), until ``stop``."""
    try:
        for event in watcher.watch(subject, after=None, poll=1.0):
            if stop.is_set():
                return
            if event["subject"] is not None:
                uri = f"pgmem://memories/{event['subject']}"
                asyncio.run_coroutine_threadsafe(bus.publish(ResourceUpdated(uri=uri)), loop)
            if stop.is_set():
                return
    except Exception:
        # The tools still work; clients only stop hearing of changes.
        logging.getLogger("pgmem").exception("the change stream of pgmem mcp stopped")
    finally:
        watcher.close()


class TokenCheck:
    """The bearer tokens of ``pgmem mcp --auth`` (``pgmem.mcp_token``): a token of the
    served tenant passes, confined to its subject when it was made for one; any
    other, unknown or revoked one is refused (HTTP 401). Checked at every request,
    so a revocation holds at once."""

    def __init__(self, binding: Binding) -> None:
        self.binding = binding

    async def verify_token(self, token: str) -> AccessToken | None:
        row = await anyio.to_thread.run_sync(self._lookup, token)
        if row is None or row["tenant_id"] != self.binding.tenant:
            return None
        if self.binding.subject is not None and row["subject"] not in (None, self.binding.subject):
            return None  # made for another subject than the one this server serves
        return AccessToken(token=token, client_id=row["label"], scopes=[], subject=row["subject"])

    def _lookup(self, token: str) -> Row | None:
        if len(token) > 256:
            return None
        with self.binding.lock, self.binding.memory.transaction() as conn:
            rows = fetch_all(conn, queries.MCP_TOKEN, {"token": token})
        return rows[0] if rows else None


def build_server(
    binding: Binding,
    *,
    watcher: Callable[[], Memory] | None = None,
    auth_url: str | None = None,
) -> MCPServer:
    """An MCP server whose tools act through ``binding``; run it with ``.run()``.

    ``watcher`` makes the client (its own connection) that follows the tenant's change
    stream while the server runs: a ``subscriptions/listen`` client subscribed to
    ``pgmem://memories/{user}`` then hears whenever that user's memories change,
    whoever changed them. ``auth_url`` (the server's own ``http://host:port``) makes
    every HTTP request carry a bearer token of the tenant (:class:`TokenCheck`)."""
    bus = InMemorySubscriptionBus()

    @asynccontextmanager
    async def follow(_: MCPServer) -> AsyncIterator[None]:
        if watcher is None:
            yield
            return
        stop = threading.Event()
        thread = threading.Thread(
            target=_follow_changes,
            args=(watcher(), binding.subject, bus, asyncio.get_running_loop(), stop),
            name="pgmem-mcp-changes",
            daemon=True,
        )
        thread.start()
        try:
            yield
        finally:
            stop.set()

    server: MCPServer = MCPServer(
        "pgmem",
        title="pgmem memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        subscriptions=bus,
        lifespan=follow,
        auth=None
        if auth_url is None
        else AuthSettings(
            issuer_url=AnyHttpUrl(auth_url), resource_server_url=AnyHttpUrl(f"{auth_url}/mcp")
        ),
        token_verifier=None if auth_url is None else TokenCheck(binding),
        tools=[
            _tool(factory(binding), binding, hints)
            for factory, hints in (*LONG_TERM_TOOLS, *SESSION_TOOLS, *TASK_TOOLS)
        ],
    )

    @server.prompt(
        name="answer_with_memory",
        description="A question together with what pgmem knows about the user for it.",
    )
    def answer_with_memory(question: str, user: str | None = None) -> str:
        try:
            with binding.call():
                block = binding.memory.context(question, binding.user(user), 800)
        except ToolError as exc:
            raise ValueError(str(exc)) from exc
        known = str(block).strip() or "(nothing relevant is known)"
        return (
            "What you know about the user (long-term memory):\n"
            f"{known}\n\n"
            "Answer with it where it applies; when the user tells you something worth "
            f"keeping, call the `remember` tool with their words.\n\nQuestion: {question}"
        )

    @server.prompt(
        name="recall_before_answering",
        description="Instructions to consult memory before each answer and keep what is said.",
    )
    def recall_before_answering(user: str | None = None) -> str:
        whose = f" (user={binding.user(user)!r})" if user or binding.subject else ""
        return (
            f"Before each answer, call the `context` tool{whose}, its query what the user "
            "asked, and use what it returns. When the user states a fact, a preference or an "
            "instruction, call `remember` with their words. Correct a wrong memory with "
            "`update`; remove one with `forget`."
        )

    @server.resource(
        "pgmem://memories/{user}",
        name="memories",
        description=(
            "The active memories of a subject, newest first (at most 100); subscribe to hear "
            "when they change."
        ),
        mime_type="application/json",
    )
    def memories(user: str) -> list[Row]:
        try:
            with binding.call():
                return binding.memory.get_all(binding.user(user), limit=MAX_LIST)
        except ToolError as exc:
            raise ResourceError(str(exc)) from exc

    return server
