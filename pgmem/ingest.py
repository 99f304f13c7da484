"""The one write path from messages to memory: plan, embed, one ``pgmem.remember_many``.

``Memory.add`` and the worker both come through here, so a turn gets the same
decisions whichever way it arrives:

1. :func:`plan` turns messages into :class:`Planned` items: each stated turn of the
   user's as written (an episode, source ``turn``: the record, which only an exact
   re-send matches), then the facts extracted from them (:func:`pgmem.extract.extract`),
   each ``derived_from`` its turns, then the text the extractor refused, each marked
   ``rejected`` with the extractor's reason. A message kept in none of these has an
   outcome too (:func:`unstored`: small talk, empty, another role's): nothing said
   disappears without a word. :func:`plan_as_is` keeps the text as written
   (``Memory.add(infer=False)``), a record like an episode, with no facts.
   :func:`resolve_times` then writes the absolute date beside every relative one
   ("next Friday (2026-12-04)", :mod:`pgmem.timeexpr`), as of the turn's time in the
   subject's time zone: relative dates never reach storage.
2. :func:`embed` embeds the items that will be stored (never rejected text), in one
   call for as many turns as the caller has.
3. :func:`items` builds ``pgmem.remember_many``'s JSON items; :func:`remember` runs it.

Rejection is decided in SQL: ``remember_many`` rejects an item its own rules
(``pgmem.safety_rules()``) match, or that carries the ``rejected`` key, and records a
content-free ``reject`` event (rule, size and SHA-256, never the text); whatever else
the database decides (reinforced, superseded, deduplicated…) it decides there too.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pgmem import queries, timeexpr
from pgmem.embed import Embedder
from pgmem.extract import (
    ExtractionResult,
    LLMExtractor,
    Mode,
    as_messages,
    extract,
    is_small_talk,
)

__all__ = [
    "EPISODE_ROLES",
    "TURN",
    "Planned",
    "as_jsonb",
    "embed",
    "episode_roles",
    "items",
    "plan",
    "plan_as_is",
    "planned_from",
    "remember",
    "resolve_times",
    "resolve_times_of",
    "scope_to_now",
    "spread",
    "states_time",
    "stored_texts",
    "unstored",
]

Vector = list[float]


@dataclass(frozen=True, slots=True)
class Planned:
    """One item about to go to ``pgmem.remember_many``."""

    content: str
    kind: str
    importance: float | None
    source: str
    triple: tuple[str, str, str] | None = None
    rejected: str | None = None  # the extractor's reason; SQL records the rejection
    confidence: float | None = None  # None: the database's default for the source
    valid_from: datetime | None = None  # a past event's day (resolve_times); None: the turn's
    expires_at: datetime | None = None  # an appointment's day + grace (resolve_times)
    derived_from: tuple[int, ...] = ()  # positions (from 0) of the items it was extracted from
    past: bool = False  # tells of something that happened: a date in it is no appointment
    check_conflicts: bool = True  # False: a wish for now, which retires no standing fact


# The source of a stated turn kept as written: the episode facts are derived from.
TURN = "turn"
# Whose turns are kept as episodes by default: what the user says is the record; an
# assistant's or a tool's words are context, kept in the session window.
EPISODE_ROLES: tuple[str, ...] = ("user",)


# Kinds whose future-dated facts are appointments that end: a preference or a procedure
# stated with a date ("from next week I prefer tea") outlives the date.
APPOINTMENT_KINDS = frozenset({"episodic", "semantic"})


def planned_from(result: ExtractionResult, episodes: Sequence[Planned] = ()) -> list[Planned]:
    """The episodes, the facts of an extraction (each derived from every episode), then
    the text it refused (marked ``rejected``). A fact that its episode says word for word
    ("User is allergic to shellfish") is stored as a fact too: the episode is the record
    of what was said, the fact carries its kind and triple (and a profile line)."""
    sources = tuple(range(len(episodes)))
    planned = list(episodes)
    planned += [
        Planned(
            f.content,
            f.kind,
            f.importance,
            f.source,
            f.triple,
            confidence=f.confidence,
            derived_from=sources,
            past=f.past,
        )
        for f in result.facts
    ]
    planned += [
        Planned(r.text, "episodic", 0.0, "rule", rejected=r.reason)
        for r in result.rejected
        if r.text.strip()
    ]
    return planned


def episodes(
    messages: Sequence[Mapping[str, Any]],
    result: ExtractionResult,
    roles: Iterable[str] = EPISODE_ROLES,
) -> list[Planned]:
    """Each stated turn of ``roles`` as written: not blank, not small talk, not refused
    as an injection (``result.rejected``)."""
    wanted = {r.lower() for r in roles}
    refused = {r.text for r in result.rejected}
    return [
        Planned(m["content"], "episodic", None, TURN)
        for m in messages
        if m["role"] in wanted
        and m["content"].strip()
        and not is_small_talk(m["content"])
        and m["content"] not in refused
    ]


def plan(
    messages: str | Iterable[Mapping[str, Any] | str],
    *,
    llm: LLMExtractor | None = None,
    mode: Mode | None = None,
    episode_roles: Iterable[str] = EPISODE_ROLES,
) -> tuple[list[Planned], ExtractionResult]:
    """Items for a conversation, and the extraction they came from."""
    listed = as_messages(messages)
    result = extract(listed, llm=llm, mode=mode)
    return planned_from(result, episodes(listed, result, episode_roles)), result


def episode_roles(roles: Iterable[str] | None) -> tuple[str, ...]:
    """The roles whose turns are kept as episodes: the user's always, and those named
    (``assistant``, ``tool``); ValueError for another role or ``system``."""
    named = {r.strip().lower() for r in roles or ()}
    unknown = sorted(named - {"user", "assistant", "tool"})
    if unknown:
        raise ValueError(
            f"episode roles are user, assistant and tool, not {', '.join(map(repr, unknown))}"
        )
    return ("user", *sorted(named - {"user"}))


def unstored(
    messages: str | Iterable[Mapping[str, Any] | str],
    planned: Sequence[Planned],
    roles: Iterable[str] = EPISODE_ROLES,
) -> list[dict[str, Any]]:
    """The outcome of each message that no item of ``planned`` keeps or refuses: why
    nothing of it was stored (``skipped`` with a reason)."""
    wanted = set(roles)
    kept = {p.content for p in planned}
    out = []
    for m in as_messages(messages):
        text = m["content"]
        if text in kept:
            continue
        if not text.strip():
            reason = "empty"
        elif m["role"] not in wanted:
            reason = f"{m['role']} turn: context, not kept"
        elif is_small_talk(text):
            reason = "small_talk"
        else:
            continue  # a user's turn that is not its own item lives in its facts
        out.append({"action": "skipped", "reason": reason, "content": text, "kind": None})
    return out


def plan_as_is(
    messages: str | Iterable[Mapping[str, Any] | str], kind: str, importance: float | None
) -> list[Planned]:
    """The text, or each non-system message, to be stored as written: the record itself
    (source ``turn``), which only an exact re-send matches."""
    return [
        Planned(m["content"], kind, importance, TURN)
        for m in as_messages(messages)
        if m["role"] != "system" and m["content"].strip()
    ]


def states_time(planned: Sequence[Planned]) -> bool:
    """Whether any item to be stored names a date or time (only then is the subject's
    time zone worth a query)."""
    today = date.today()  # where a date is, not which, does not depend on the day
    return any(p.rejected is None and timeexpr.find(p.content, today) for p in planned)


def resolve_times(
    planned: Sequence[Planned], occurred_at: datetime, tz: tzinfo, grace: timedelta
) -> list[Planned]:
    """Each item to be stored with its relative dates resolved as of ``occurred_at`` in
    ``tz`` (:func:`pgmem.timeexpr.resolve`): the absolute date written beside the words,
    the valid time moved back to the day a past event happened, and an appointment
    (episodic or semantic fact naming a future day, not told as past) expiring ``grace``
    after that day."""
    out = []
    for p in planned:
        if p.rejected is not None:
            out.append(p)
            continue
        resolved = timeexpr.resolve(p.content, occurred_at, tz)
        if not resolved.mentions:
            out.append(p)
            continue
        if p.source == TURN:
            # A turn is the record: it never expires, whatever day it names; a past
            # event it tells of dates it, as it dates its facts.
            out.append(replace(p, content=resolved.content, valid_from=resolved.valid_from))
            continue
        # "This weekend we visited grandma", told on Saturday, is over: no expiry.
        end = resolved.event_end if p.kind in APPOINTMENT_KINDS and not p.past else None
        out.append(
            replace(
                p,
                content=resolved.content,
                # "lives_in: Lisbon 3 days ago" is "lives_in: Lisbon" since a date.
                triple=_without_times(p.triple, occurred_at.astimezone(tz).date()),
                valid_from=resolved.valid_from,
                expires_at=None if end is None else end + grace,
            )
        )
    return out


def _without_times(triple: tuple[str, str, str] | None, today: date) -> tuple[str, str, str] | None:
    if triple is None:
        return None
    parts = tuple(timeexpr.strip(part, today) or part for part in triple)
    return parts[0], parts[1], parts[2]


def resolve_times_of(
    conn: psycopg.Connection[Any],
    subject: str,
    planned: Sequence[Planned],
    occurred_at: datetime | None,
) -> list[Planned]:
    """:func:`resolve_times` in ``subject``'s time zone and its tenant's appointment grace
    (tenant bound by the caller), as of ``occurred_at`` (None: now); then
    :func:`scope_to_now` for the turns ``pgmem.now_scoped`` finds scoped to now. No
    query unless an item names a date or a fact was extracted from a turn."""
    turns = [i for i, p in enumerate(planned) if p.source == TURN and p.rejected is None]
    derived = any(p.derived_from for p in planned)
    if not states_time(planned) and not (turns and derived):
        return list(planned)
    at = occurred_at or datetime.now(UTC)
    params = {"subject": subject, "turns": [planned[i].content for i in turns], "at": at}
    with conn.cursor(row_factory=dict_row) as cur:
        policy = cur.execute(queries.TIME_POLICY, params).fetchone()
    assert policy is not None  # the _default settings row always exists
    resolved = resolve_times(
        planned, at, timeexpr.time_zone(policy["time_zone"]), policy["appointment_grace"]
    )
    scoped = {turns[int(n) - 1]: datetime.fromisoformat(e) for n, e in policy["scoped"].items()}
    return scope_to_now(resolved, scoped)


def scope_to_now(planned: Sequence[Planned], scoped: Mapping[int, datetime]) -> list[Planned]:
    """The facts extracted from a turn scoped to now ("today", "this time", 暂时…; the
    positions in ``scoped``, with the end of the subject's day) as wishes for now: they
    expire with the day and retire no standing fact: no contradiction check, and no
    triple, whose (subject, predicate) would replace the standing value. The turn
    itself, the record, stays."""
    out = []
    for p in planned:
        ends = [scoped[i] for i in p.derived_from if i in scoped]
        if not ends or p.source == TURN or p.rejected is not None:
            out.append(p)
            continue
        end = min([*ends, *([p.expires_at] if p.expires_at is not None else [])])
        out.append(replace(p, triple=None, expires_at=end, check_conflicts=False))
    return out


def stored_texts(planned: Sequence[Planned]) -> list[str]:
    """The texts of the items that will be stored (not rejected): what is embedded."""
    return [p.content for p in planned if p.rejected is None]


def spread(planned: Sequence[Planned], vectors: Sequence[Vector | None]) -> list[Vector | None]:
    """One vector per item from the vectors of :func:`stored_texts`: None for rejected
    items, and for every item when ``vectors`` runs short (none were computed)."""
    stored = iter(vectors)
    return [None if p.rejected is not None else next(stored, None) for p in planned]


def embed(planned: Sequence[Planned], embedder: Embedder | None) -> list[Vector | None]:
    """One vector per item: None for rejected items, and for all without an embedder."""
    stored = stored_texts(planned)
    return spread(planned, embedder.embed(stored) if embedder is not None and stored else [])


def items(
    planned: Sequence[Planned],
    vectors: Sequence[Vector | None],
    *,
    session_id: str | None = None,
    agent_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    valid_from: datetime | str | None = None,
    confidence: float | None = None,
    expires_at: datetime | str | None = None,
    check_conflicts: bool = True,
) -> list[dict[str, Any]]:
    """``pgmem.remember_many`` items (keys left out rather than null). ``confidence``
    and ``expires_at``, when given, apply to every item (the caller's trust in the
    turn overrides an extractor's self-rating); otherwise an item's own valid time and
    expiry (:func:`resolve_times`) win over the turn's ``valid_from``.
    ``check_conflicts=False`` writes them as explicit key-value items that never retire
    another fact as a contradiction."""
    out = []
    for p, vector in zip(planned, vectors, strict=True):
        triple = p.triple or (None, None, None)
        item = {
            "content": p.content,
            "embedding": vector,
            "kind": p.kind,
            # JSON has no NaN or infinity: such an importance travels as its text, which
            # pgmem.remember_many refuses with PM014 like any importance outside 0..1.
            "importance": p.importance
            if p.importance is None or math.isfinite(p.importance)
            else str(p.importance),
            "source": p.source,
            "triple_subject": triple[0],
            "triple_predicate": triple[1],
            "triple_object": triple[2],
            "session_id": session_id,
            "agent_id": agent_id,
            "metadata": dict(metadata or {}),
            "valid_from": p.valid_from or valid_from,
            "confidence": p.confidence if confidence is None else confidence,
            "expires_at": p.expires_at if expires_at is None else expires_at,
            "check_conflicts": None if check_conflicts and p.check_conflicts else False,
            "rejected": p.rejected,
            # remember_many numbers items from 1
            "derived_from": [i + 1 for i in p.derived_from] or None,
        }
        out.append({k: v for k, v in item.items() if v is not None})
    return out


def remember(
    conn: psycopg.Connection[Any], subject: str | None, batch: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Runs ``pgmem.remember_many`` (tenant bound by the caller): one row per item, in
    item order, with ``item`` counting from 1; ``subject`` is the default of items
    without one."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(queries.REMEMBER_MANY, {"items": as_jsonb(list(batch)), "subject": subject})
        return cur.fetchall()


def _json_default(value: object) -> object:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def as_jsonb(value: object) -> Jsonb:
    """A JSON parameter; timestamps (as export yields them) become ISO 8601 text."""
    return Jsonb(value, dumps=functools.partial(json.dumps, default=_json_default))
