"""Short-term memory: appends, the window, rolling summaries, retention, isolation."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from conftest import Db, Tenant, raises_sqlstate
from psycopg.rows import dict_row
from test_extract_llm import FakeLLM, Reply, fake_llm  # noqa: F401  (fixture)

from pgmem import Memory
from pgmem.extract import LLMExtractor
from pgmem.summarize import EXTRACTIVE_LABEL
from pgmem.worker import Worker

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def append(
    conn: psycopg.Connection, role: str, content: str, *, session: str = "s1", **kw: Any
) -> int:
    params = {"role": role, "content": content, "session": session, **kw}
    row = conn.execute(
        "select seq from pgmem.append_message('alice', %(session)s, %(role)s, %(content)s,"
        " p_protected => %(protected)s)",
        {"protected": False} | params,
    ).fetchone()
    assert row is not None
    return int(row[0])


def window(conn: psycopg.Connection, session: str = "s1", **kw: Any) -> list[int]:
    rows = conn.execute(
        "select seq from pgmem.session_window('alice', %(session)s, %(turns)s, %(tokens)s,"
        " %(strategy)s)",
        {"session": session, "turns": None, "tokens": None, "strategy": None} | kw,
    ).fetchall()
    return [r[0] for r in rows]


def settings(db: Db, tenant: Tenant, **values: Any) -> None:
    for column, value in values.items():
        db.admin.execute(
            psycopg.sql.SQL("update pgmem.settings set {} = %s where tenant_id = %s").format(
                psycopg.sql.Identifier(column)
            ),
            (value, tenant.name),
        )


# ----------------------------------------------------------------- appends


def test_user_turns_also_queue_extraction(new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    user = t.conn.execute(
        "select seq, inbox_id from pgmem.append_message('alice', 's1', 'user', 'I live in Oslo')"
    ).fetchone()
    assistant = t.conn.execute(
        "select seq, inbox_id from pgmem.append_message('alice', 's1', 'assistant', 'Noted.')"
    ).fetchone()
    quiet = t.conn.execute(
        "select seq, inbox_id from pgmem.append_message('alice', 's1', 'user', 'psst',"
        " p_extract => false)"
    ).fetchone()
    assert user is not None and assistant == (2, None) and quiet == (3, None)
    assert user[0] == 1 and user[1] is not None
    job = t.conn.execute(
        "select job, subject, session_id, payload -> 'messages', payload -> 'metadata'"
        " from pgmem.inbox where inbox_id = %s",
        (user[1],),
    ).fetchone()
    assert job == (
        "turn",
        "alice",
        "s1",
        [{"role": "user", "content": "I live in Oslo"}],
        {"session_seq": 1},
    )
    assert t.conn.execute("select count(*) from pgmem.inbox").fetchone() == (1,)


def test_concurrent_appends_keep_order_and_lose_nothing(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    writers, turns = 4, 25
    start = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            with psycopg.connect(t.dsn, autocommit=True) as conn:
                start.wait()
                for n in range(turns):
                    append(conn, "assistant", f"w{writer} n{n}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = t.conn.execute("select seq, content from pgmem.session_messages order by seq").fetchall()
    assert [seq for seq, _ in rows] == list(range(1, writers * turns + 1))
    for w in range(writers):
        mine = [int(c.split("n")[1]) for _, c in rows if c.startswith(f"w{w} ")]
        assert mine == list(range(turns))  # each writer's turns in its own order
    assert t.conn.execute("select next_seq from pgmem.sessions").fetchone() == (
        writers * turns + 1,
    )


def test_bad_input_is_refused_and_nothing_is_written(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    settings(db, t, max_turn_bytes=100)
    with raises_sqlstate("PM071"):
        append(t.conn, "robot", "hello")
    with raises_sqlstate("PM072"):
        append(t.conn, "user", "x" * 101)
    with raises_sqlstate("PM011"):
        append(t.conn, "user", "   ")
    with raises_sqlstate("PM070"):
        append(t.conn, "user", "hello", session=" ")
    with raises_sqlstate("PM020"):
        t.conn.execute(
            "select pgmem.append_message('alice', 's1', 'user', 'hi', p_metadata => '[]')"
        )
    with raises_sqlstate("PM073"):
        window(t.conn, strategy="random")
    for table in ("sessions", "session_messages", "inbox", "subjects"):
        assert t.conn.execute(f"select count(*) from pgmem.{table}").fetchone() == (0,), table


# ------------------------------------------------------------------ window


def test_window_by_count_keeps_system_protected_and_tool_groups(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    append(t.conn, "system", "You are a travel agent.")  # 1
    append(t.conn, "user", "My passport number ends in 42.", protected=True)  # 2
    append(t.conn, "user", "Find flights to Rome.")  # 3
    append(t.conn, "assistant", "calling search_flights")  # 4
    append(t.conn, "tool", '{"flights": 3}')  # 5: with 4
    append(t.conn, "tool", '{"cheapest": "AZ 101"}')  # 6: with 4
    append(t.conn, "assistant", "Three flights; AZ 101 is cheapest.")  # 7
    append(t.conn, "user", "Book it.")  # 8
    # Default 10 turns: everything.
    assert window(t.conn) == [1, 2, 3, 4, 5, 6, 7, 8]
    # Two turns: the newest two, plus the system and protected turns.
    assert window(t.conn, turns=2) == [1, 2, 7, 8]
    # Three turns: the tool call comes with both of its results.
    assert window(t.conn, turns=3) == [1, 2, 4, 5, 6, 7, 8]
    # Zero turns: only what is never cut.
    assert window(t.conn, turns=0) == [1, 2]
    units = t.conn.execute("select seq, unit_seq from pgmem.session_messages order by seq")
    assert [u for _, u in units.fetchall()] == [1, 2, 3, 4, 4, 4, 7, 8]


def test_window_by_tokens_counts_every_turn_shown(new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    append(t.conn, "system", "s" * 40)  # 10 tokens
    for n in range(2, 7):
        append(t.conn, "user" if n % 2 else "assistant", str(n) * 40)  # 10 tokens each
    tokens = dict(t.conn.execute("select seq, tokens from pgmem.session_messages").fetchall())
    assert set(tokens.values()) == {10}
    # 35 tokens: system (10) + the two newest (20); a third would make 40.
    assert window(t.conn, tokens=35) == [1, 5, 6]
    assert window(t.conn, tokens=40) == [1, 4, 5, 6]
    # Whichever binds first: one turn although the tokens allow three.
    assert window(t.conn, tokens=40, turns=1) == [1, 6]
    # A tool result too big for what is left takes its call out with it.
    append(t.conn, "assistant", "call")  # 7: 1 token
    append(t.conn, "tool", "r" * 80)  # 8: 20 tokens, with 7
    assert window(t.conn, tokens=31) == [1, 7, 8]  # 10 + 1 + 20
    assert window(t.conn, tokens=30) == [1]  # not the call without its result
    shown = t.conn.execute(
        "select sum(tokens) from pgmem.session_window('alice', 's1', p_tokens => 35)"
    ).fetchone()
    assert shown is not None and shown[0] <= 35


def test_importance_strategy_prefers_salient_first_and_last_turns(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    append(t.conn, "user", "hello there")  # 1: first turn
    append(t.conn, "assistant", "hi, how can I help")  # 2
    append(t.conn, "user", "we decided the budget is 1200 EUR")  # 3: user + number + decision
    append(t.conn, "assistant", "ok")  # 4
    append(t.conn, "assistant", "anything else")  # 5
    append(t.conn, "assistant", "bye")  # 6: last turn
    assert window(t.conn, turns=3) == [4, 5, 6]
    assert window(t.conn, turns=3, strategy="importance") == [1, 3, 6]


# ------------------------------------------------------------------ summary


@pytest.mark.parametrize(
    ("question", "answer", "fact"),
    [
        ("Which language should the report be in?", "German", "User wants the report in German"),
        (
            "What is your budget for the trip?",
            "About 2000 euros",
            "budget for the trip is About 2000 euros",
        ),
        ("报告用什么语言？", "德语吧", "用户希望报告用德语"),
        ("你在哪里工作？", "上海", "用户在上海工作"),
    ],
)
def test_an_answer_is_extracted_with_the_question_it_answers(
    new_tenant: Callable[[], Tenant], question: str, answer: str, fact: str
) -> None:
    """The session path queues the assistant's turns since the user's previous one
    with the user's turn, so the worker stores the fact the answer completes."""
    t = new_tenant()
    append(t.conn, "user", "Please write the trip report.")
    append(t.conn, "assistant", "Sure.")
    append(t.conn, "assistant", question)
    append(t.conn, "user", answer)
    t.conn.commit()
    queued = t.conn.execute(
        "select payload -> 'messages' from pgmem.inbox order by inbox_id desc limit 1"
    ).fetchone()
    assert queued == (
        [
            {"role": "assistant", "content": "Sure."},
            {"role": "assistant", "content": question},
            {"role": "user", "content": answer},
        ],
    )
    Worker(t.dsn, llm=None).run(once=True)
    facts = [
        r[0]
        for r in t.conn.execute(
            "select content from pgmem.memories where subject = 'alice' and status = 'active'"
            " and source = 'rule'"
        )
    ]
    assert any(fact in content for content in facts), facts
    # The assistant's words are context: no episode of them.
    assert t.conn.execute(
        "select count(*) from pgmem.memories where content = %s", (question,)
    ).fetchone() == (0,)


def fold_worker(dsn: str, llm: LLMExtractor | None) -> Worker:
    return Worker(dsn, llm=llm)


def test_turns_leaving_the_window_fold_into_a_versioned_extractive_summary(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    settings(db, t, window_turns=2)
    append(t.conn, "system", "Be brief.")
    append(t.conn, "user", "I moved to Lisbon in March. It is sunny.")
    append(t.conn, "assistant", "Lisbon is lovely.")
    append(t.conn, "user", "My budget is 900 euros.")
    worker = fold_worker(t.dsn, None)
    with worker.connect() as conn:
        assert worker.fold_pass(conn) == 1
        assert worker.fold_pass(conn) == 0  # nothing left to fold
        first = Memory(conn=t.conn).session("s1", "alice").summary()
        assert first is not None
        assert (first["version"], first["from_seq"], first["through_seq"]) == (1, 1, 2)
        assert first["method"] == "extractive" and first["model"] is None
        lines = first["summary"].splitlines()
        assert lines[0] == EXTRACTIVE_LABEL
        assert "- user (turn 2): I moved to Lisbon in March." in lines
        assert not any("Be brief" in line for line in lines)  # system turns stay verbatim
        append(t.conn, "assistant", "Noted.")
        append(t.conn, "user", "Thanks!")
        assert worker.fold_pass(conn) == 1
    second = Memory(conn=t.conn).session("s1", "alice").summary()
    assert second is not None
    assert (second["version"], second["from_seq"], second["through_seq"]) == (2, 3, 4)
    assert "Lisbon" in second["summary"] and "budget is 900" in second["summary"]
    versions = t.conn.execute(
        "select version, from_seq, through_seq from pgmem.session_summaries order by version"
    ).fetchall()
    assert versions == [(1, 1, 2), (2, 3, 4)]
    assert window(t.conn) == [1, 5, 6]


def test_summary_with_an_llm_and_fallback_when_it_fails(
    db: Db,
    new_tenant: Callable[[], Tenant],
    fake_llm: FakeLLM,  # noqa: F811  (the fixture imported above)
) -> None:
    t = new_tenant()
    settings(db, t, window_turns=1)
    append(t.conn, "user", "Book a table for four at 8pm.")
    append(t.conn, "assistant", "Booked at Luigi's.")
    extractor = LLMExtractor.connect(base_url=fake_llm.url, timeout=5, max_retries=0)
    fake_llm.answer("The user booked a table for four at 8pm at Luigi's.")
    worker = fold_worker(t.dsn, extractor)
    with extractor, worker.connect() as conn:
        assert worker.fold_pass(conn) == 1
        shown = fake_llm.prompt()
        assert "Book a table for four at 8pm." in shown and "(none)" in shown
        append(t.conn, "user", "Make it five people.")
        fake_llm.answer(Reply(status=500))
        assert worker.fold_pass(conn) == 1
        assert "The user booked a table for four" in fake_llm.prompt()  # the previous summary
    rows = t.conn.execute(
        "select version, method, model, summary from pgmem.session_summaries order by version"
    ).fetchall()
    assert rows[0][:3] == (1, "llm", extractor.model)
    assert rows[0][3] == "The user booked a table for four at 8pm at Luigi's."
    assert rows[1][:3] == (2, "extractive", None)
    assert rows[1][3].startswith(EXTRACTIVE_LABEL)
    assert "earlier: The user booked a table for four" in rows[1][3]
    assert "Booked at Luigi's." in rows[1][3]


def test_a_lost_fold_race_keeps_the_first_summary(new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    append(t.conn, "user", "one")
    save = "select pgmem.save_summary('alice', 's1', %s, %s, 'summary', 'extractive')"
    assert t.conn.execute(save, (1, 1)).fetchone() == (1,)
    assert t.conn.execute(save, (1, 1)).fetchone() == (None,)  # from_seq is stale now
    with raises_sqlstate("PM074"):
        t.conn.execute("select pgmem.save_summary('alice', 's1', 2, 2, 'x', 'magic')")
    with raises_sqlstate("PM075"):
        t.conn.execute("select pgmem.save_summary('alice', 'nope', 1, 1, 'x', 'llm')")


# --------------------------------------------------------------- lifecycle


def test_retention_purges_turns_keeps_summaries_and_erase_removes_all(
    db: Db, new_tenant: Callable[[], Tenant]
) -> None:
    t = new_tenant()
    for n, when in enumerate((T0, T0 + timedelta(days=20))):
        t.conn.execute(
            "select pgmem.append_message('alice', %s, 'user', 'hello', p_now => %s)",
            (f"s{n}", when),
        )
    t.conn.execute("select pgmem.save_summary('alice', 's0', 1, 1, 'said hello', 'extractive')")
    # Day 25: s0 has been idle since day 1 (closed then), s1 since day 20.
    counts = t.conn.execute(
        "select * from pgmem.expire_sessions(%s)", (T0 + timedelta(days=25),)
    ).fetchone()
    assert counts == (2, 0)
    # Day 33: s0 closed more than 30 days ago (retention): its turns go, its summary stays.
    counts = t.conn.execute(
        "select * from pgmem.expire_sessions(%s)", (T0 + timedelta(days=33),)
    ).fetchone()
    assert counts == (0, 1)
    left = t.conn.execute("select session_id from pgmem.session_messages").fetchall()
    assert left == [("s1",)]
    assert t.conn.execute("select count(*) from pgmem.session_summaries").fetchone() == (1,)
    run = db.admin.execute(
        "select status, counts from pgmem.run_job('sessions', %s, %s)",
        (T0 + timedelta(days=60), t.name),
    ).fetchone()
    assert run == ("ok", {"closed": 0, "purged_messages": 1, "expired_tasks": 0})
    # An append reopens a closed session.
    t.conn.execute("select pgmem.append_message('alice', 's0', 'user', 'back again')")
    assert t.conn.execute(
        "select status, closed_at from pgmem.sessions where session_id = 's0'"
    ).fetchone() == ("open", None)
    t.conn.execute("select pgmem.erase_subject('alice')")
    for table in ("sessions", "session_messages", "session_summaries", "tasks"):
        assert t.conn.execute(f"select count(*) from pgmem.{table}").fetchone() == (0,), table


def test_tenants_cannot_read_or_write_each_others_sessions(
    new_tenant: Callable[[], Tenant],
) -> None:
    a, b = new_tenant(), new_tenant()
    append(a.conn, "user", "secret plans")
    a.conn.execute("select pgmem.save_summary('alice', 's1', 1, 1, 'secret', 'extractive')")
    for table in ("sessions", "session_messages", "session_summaries"):
        assert b.conn.execute(f"select count(*) from pgmem.{table}").fetchone() == (0,)
    assert window(b.conn) == []
    assert b.conn.execute("select * from pgmem.session_summary('alice', 's1')").fetchall() == []
    assert (
        "secret" not in b.conn.execute("select pgmem.prompt('alice', 's1', 'plans')").fetchone()[0]
    )  # type: ignore[index]
    # B's append opens B's own session; A's is untouched.
    assert append(b.conn, "user", "mine") == 1
    assert a.conn.execute("select count(*) from pgmem.session_messages").fetchone() == (1,)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        b.conn.execute(
            "insert into pgmem.session_messages (tenant_id, subject, session_id, seq, unit_seq,"
            " role, content, tokens) values (%s, 'alice', 's1', 9, 9, 'user', 'x', 1)",
            (a.name,),
        )
    assert (
        b.conn.execute(
            "update pgmem.sessions set next_seq = 100 where tenant_id = %s", (a.name,)
        ).rowcount
        == 0
    )
    # Deletes are not B's to make at all (revision 0005): refused, A's summary stays.
    with pytest.raises(psycopg.errors.InsufficientPrivilege), b.conn.transaction():
        b.conn.execute("delete from pgmem.session_summaries where tenant_id = %s", (a.name,))
    assert a.conn.execute("select count(*) from pgmem.session_summaries").fetchone() == (1,)
    assert b.conn.execute("select * from pgmem.claim_folds()").fetchall() == []
    with raises_sqlstate("PM075"):
        b.conn.execute("select pgmem.save_summary('alice', 'nope', 1, 1, 'x', 'llm')")
    with b.conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute("select * from pgmem.expire_sessions(now() + interval '1 year')")
        # Its own session only: closed a day after its last turn, its turns past retention.
        assert rows.fetchone() == {"closed": 1, "purged_messages": 1}
    assert a.conn.execute("select status from pgmem.sessions").fetchone() == ("open",)


def reference_window(turns: list[tuple[int, str, int, bool]], cap: int, budget: int) -> list[int]:
    """The recency window by its definition, over every turn: (seq, role, tokens, protected)."""
    units: dict[int, list[tuple[int, str, int, bool]]] = {}
    head = 0
    for seq, role, tokens, protected in turns:
        if role != "tool" or head == 0:
            head = seq
        units.setdefault(head, []).append((seq, role, tokens, protected))
    kept = {h for h, u in units.items() if any(r == "system" or p for _, r, _, p in u)}
    used = sum(t for h in kept for _, _, t, _ in units[h])
    chosen = set(kept)
    for n, h in enumerate(sorted(set(units) - kept, reverse=True), start=1):
        used += sum(t for _, _, t, _ in units[h])
        if n > cap or used > budget:
            break
        chosen.add(h)
    return sorted(seq for h in chosen for seq, _, _, _ in units[h])


def test_the_recency_window_matches_its_definition_on_random_sessions(
    new_tenant: Callable[[], Tenant],
) -> None:
    t = new_tenant()
    rng = random.Random(9)
    roles = ["user", "assistant", "tool", "tool", "system"]
    for session in range(6):
        turns = []
        for seq in range(1, 61):
            role = rng.choice(roles) if seq > 1 else rng.choice(["system", "tool", "user"])
            role = "user" if role == "system" and rng.random() < 0.8 else role
            content = "x" * rng.randint(1, 60)
            protected = rng.random() < 0.05
            append(t.conn, role, content, session=f"r{session}", protected=protected)
            turns.append((seq, role, (len(content) + 3) // 4, protected))
        for cap, budget in ((3, 10_000), (10, 60), (0, 50), (25, 200), (60, 10_000)):
            got = window(t.conn, session=f"r{session}", turns=cap, tokens=budget)
            assert got == reference_window(turns, cap, budget), (session, cap, budget)
