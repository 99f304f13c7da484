"""Plain statements extract: third person, events, both clauses, no fragment slots.

Phrasings written apart from the rules' own examples (other names, places, verbs), so
they show the behaviour rather than the pattern list.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pgmem import ingest
from pgmem.extract.rules import extract_with_rules


def facts(text: str) -> list[tuple[str, tuple[str, str, str] | None, bool]]:
    found = extract_with_rules([{"role": "user", "content": text}]).facts
    return [(f.content, f.triple, f.past) for f in found]


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("Bob is a pharmacist.", "Bob is a pharmacist"),
        ("The user's daughter plays the cello.", "User's daughter plays the cello"),
        ("We bought a house in Porto last year.", "User bought a house in Porto last year"),
        ("I switched from Android to iPhone.", "User switched from Android to iPhone"),
        ("Next Tuesday I start my new job at Figma.", "Next Tuesday the user starts"),
        ("I'm flying to Lisbon on 12 May.", "User is flying to Lisbon on 12 May"),
        ("我表姐在杭州开咖啡店。", "用户的表姐在杭州开咖啡店"),
        ("用户喜欢喝乌龙茶", "用户喜欢喝乌龙茶"),
    ],
)
def test_a_plain_statement_is_never_silently_dropped(text: str, content: str) -> None:
    found = facts(text)
    assert found, f"nothing extracted from {text!r}"
    assert any(c.startswith(content) for c, _, _ in found), found


def test_the_second_clause_stays_with_the_first() -> None:
    [(content, _, past)] = facts("我昨天去爬山了，爬了五个小时。")
    assert "五个小时" in content and past


@pytest.mark.parametrize(
    "text",
    [
        "这家店我吃着挺好的，就是有点贵。",  # 吃着挺好的 is no object
        "我的老板是北京人",  # about the boss, not the user's hometown
        "我的同事是个程序员",  # the colleague's job, not the user's
        "The user's daughter plays the cello.",
        "I work from home on Tuesdays and Thursdays.",  # no one place of work
    ],
)
def test_no_slot_from_a_fragment_or_another_person(text: str) -> None:
    assert all(triple is None for _, triple, _ in facts(text)), facts(text)


def test_a_slot_holds_the_value_alone() -> None:
    for text, employer in (
        ("I'm a nurse at Charité working nights.", "Charité"),
        ("I work at Siemens in Munich.", "Siemens"),
        ("User works at Spotify doing data science.", "Spotify"),
    ):
        triples = {t for _, t, _ in facts(text) if t and t[1] == "employer"}
        assert triples == {("user", "employer", employer)}, text
    [(_, triple, _)] = facts("我在一家保险公司上班。")
    assert triple == ("user", "employer", "保险公司")
    # An age something happened at is not the user's age.
    assert all(t is None or t[1] != "age" for _, t, _ in facts("我八岁学的游泳。"))


@pytest.mark.parametrize(
    ("text", "past"),
    [
        ("Last Saturday we went to the zoo.", True),
        ("这个周末我们去了西湖", True),
        ("This weekend I'm visiting my aunt.", False),
        ("我这个周末要去苏州", False),
    ],
)
def test_tense_tells_an_event_from_an_appointment(text: str, past: bool) -> None:
    assert [p for _, _, p in facts(text)] == [past]


def test_a_past_event_is_no_appointment_but_a_plan_expires() -> None:
    saturday = datetime(2026, 12, 5, 18, tzinfo=UTC)  # told on the weekend it names
    grace = timedelta(days=1)
    planned, _ = ingest.plan("这个周末我们去了西湖。我这个周末还要去苏州。")
    resolved = ingest.resolve_times(planned, saturday, UTC, grace)
    facts_ = {p.content: p for p in resolved if p.source != ingest.TURN}
    [went] = [p for c, p in facts_.items() if "西湖" in c]
    [plan] = [p for c, p in facts_.items() if "苏州" in c]
    assert went.expires_at is None
    assert plan.expires_at is not None and plan.expires_at > saturday
    # The turn itself is the record: it never expires.
    [turn] = [p for p in resolved if p.source == ingest.TURN]
    assert turn.expires_at is None
