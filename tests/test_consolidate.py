"""Consolidation into insights: the consolidate job marks subjects that are due (moved
clock), the worker writes one insight per cluster (extractive without an LLM, the
model's text with one), derived_from links, sources lowered or archived; stale
clusters, bad arguments and tenant isolation."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from test_extract_llm import FakeLLM, Reply, fake_llm  # noqa: F401  (fixture)

from pgmem.consolidate import insight_text
from pgmem.embed import LocalEmbedder
from pgmem.extract import LLMExtractor
from pgmem.worker import Worker

DIMS = 384
T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
Login = Callable[[str], psycopg.Connection]


def vec(*parts: tuple[int, float]) -> list[float]:
    v = [0.0] * DIMS
    for axis, weight in parts:
        v[axis] += weight
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalEmbedder]:
    local = LocalEmbedder()
    local.load()
    yield local


def episode(
    conn: psycopg.Connection,
    tenant: str,
    content: str,
    embedding: list[float],
    at: datetime,
    *,
    subject: str = "alice",
    **columns: Any,
) -> int:
    conn.execute(
        "insert into pgmem.subjects (tenant_id, subject) values (%s, %s) on conflict do nothing",
        (tenant, subject),
    )
    values = {
        "tenant_id": tenant,
        "subject": subject,
        "kind": "episodic",
        "content": content,
        "embedding": "[" + ",".join(f"{x:.8f}" for x in embedding) + "]",
        "importance": 0.5,
        "created_at": at,
        "valid_from": at,
        "last_accessed_at": at,
        **columns,
    }
    names = ", ".join(values)
    marks = ", ".join("%s::public.vector" if k == "embedding" else "%s" for k in values)
    row = conn.execute(
        f"insert into pgmem.memories ({names}) values ({marks}) returning memory_id",
        [Jsonb(v) if k == "metadata" else v for k, v in values.items()],
    ).fetchone()
    assert row is not None
    return int(row[0])


def seed(admin: psycopg.Connection, tenant: str) -> tuple[list[int], int, int]:
    """Four sushi dinners in a week (one cluster), an unrelated episode, and a fifth
    dinner too recent to consolidate."""
    sushi = [
        episode(
            admin,
            tenant,
            f"Had sushi at Sushi Dai, dinner {i + 1}",
            vec((0, 1), (i + 1, 0.3)),
            T0 + i * DAY,
        )
        for i in range(4)
    ]
    other = episode(admin, tenant, "Fixed the bike's flat tyre", vec((40, 1)), T0 + DAY)
    recent = episode(
        admin, tenant, "Had sushi again at Sushi Dai", vec((0, 1), (9, 0.3)), T0 + 9 * DAY
    )
    return sushi, other, recent


def run_job(admin: psycopg.Connection, now: datetime) -> dict[str, Any]:
    row = admin.execute(
        "select status, counts, message from pgmem.run_job('consolidate', %s)", (now,)
    ).fetchone()
    assert row is not None and row[0] == "ok", row
    return dict(row[1])


def memory(admin: psycopg.Connection, memory_id: int) -> dict[str, Any]:
    row = admin.execute(
        "select status, kind, importance, content, metadata, source from pgmem.memories"
        " where memory_id = %s",
        (memory_id,),
    ).fetchone()
    assert row is not None
    return dict(
        zip(("status", "kind", "importance", "content", "metadata", "source"), row, strict=True)
    )


def derived(admin: psycopg.Connection) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for f, t in admin.execute(
        "select from_id, to_id from pgmem.memory_links where link_type = 'derived_from'"
    ).fetchall():
        out.setdefault(int(f), set()).add(int(t))
    return out


def test_consolidation_with_a_moved_clock_writes_an_insight_and_lowers_its_sources(
    admin: psycopg.Connection, dsn: str, embedder: LocalEmbedder
) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    sushi, other, recent = seed(admin, "a")
    # Three days on, no episode is a week old: nothing is due.
    assert run_job(admin, T0 + 3 * DAY) == {"subjects": 0}
    # Ten days on, the four dinners (and the bike) are of age.
    assert run_job(admin, T0 + 10 * DAY) == {"subjects": 1}
    # A second run while the job is pending marks nothing.
    assert run_job(admin, T0 + 10 * DAY) == {"subjects": 0}

    stats = Worker(dsn, embedder=embedder, llm=None).run(once=True)
    assert stats.failed == 0
    links = derived(admin)
    assert len(links) == 1
    [(insight, sources)] = links.items()
    assert sources == set(sushi)
    row = memory(admin, insight)
    assert row["status"] == "active" and row["kind"] == "semantic" and row["source"] == "rule"
    assert row["content"].startswith(
        "[extractive insight: no LLM; 4 episodes, 2026-03-02 to 2026-03-05] Had sushi at Sushi Dai,"
    )
    assert all(f"dinner {i + 1}" in row["content"] for i in range(4))
    assert row["metadata"]["method"] == "extractive" and row["metadata"]["consolidated_from"] == 4
    assert row["importance"] == pytest.approx(0.5)  # its strongest source's
    # The sources stay findable at half their importance; the rest is untouched.
    assert {memory(admin, i)["importance"] for i in sushi} == {0.25}
    assert {memory(admin, i)["status"] for i in sushi} == {"active"}
    assert memory(admin, other)["importance"] == 0.5 and memory(admin, recent)["importance"] == 0.5
    events = admin.execute(
        "select event, details ->> 'reason', (details ->> 'insight_id')::bigint"
        " from pgmem.memory_events where memory_id = any(%s)",
        (sushi,),
    ).fetchall()
    assert events == [("update", "consolidated", insight)] * 4
    result = admin.execute(
        "select payload -> 'result' from pgmem.inbox where job = 'consolidate' and status = 'done'"
    ).fetchone()
    assert result is not None
    assert result[0]["method"] == "extractive" and result[0]["insights"] == 1
    assert result[0]["sources"] == 4
    assert "no language model" in result[0]["fallback_reason"]
    # Consolidated episodes are never taken again; the recent dinner alone is no pattern.
    assert run_job(admin, T0 + 10 * DAY) == {"subjects": 0}
    assert run_job(admin, T0 + 30 * DAY) == {"subjects": 0}


def test_archive_setting_archives_the_sources(
    admin: psycopg.Connection, dsn: str, embedder: LocalEmbedder
) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    admin.execute("update pgmem.settings set consolidate_sources = 'archive' where tenant_id = 'a'")
    sushi, other, _ = seed(admin, "a")
    assert run_job(admin, T0 + 10 * DAY) == {"subjects": 1}
    Worker(dsn, embedder=embedder, llm=None).run(once=True)
    assert {memory(admin, i)["status"] for i in sushi} == {"archived"}
    assert {memory(admin, i)["importance"] for i in sushi} == {0.5}
    assert memory(admin, other)["status"] == "active"
    events = admin.execute(
        "select count(*) from pgmem.memory_events where event = 'archive'"
        " and details ->> 'reason' = 'consolidated'"
    ).fetchone()
    assert events == (4,)


def test_clusters_need_similarity_or_an_entity_and_closeness_in_time(
    tenant_login: Login,
    admin: psycopg.Connection,
) -> None:
    conn = tenant_login("a")
    # Far apart in meaning, but one entity (Anna) in common: one cluster.
    anna = [
        episode(
            admin,
            "a",
            text,
            vec((10 + i, 1)),
            T0 + i * DAY,
            triple_subject="user",
            triple_predicate=f"met_{i}",
            triple_object="Anna",
        )
        for i, text in enumerate(["Lunch with Anna", "Anna called about the trip", "Anna's party"])
    ]
    # Alike, but two months apart from each other: no edges within 30 days.
    for i in range(3):
        episode(admin, "a", f"Walk in the park {i}", vec((30, 1), (31 + i, 0.2)), T0 + i * 60 * DAY)
    rows = conn.execute(
        "select memory_ids, contents from pgmem.consolidation_clusters('alice', %s)",
        (T0 + 200 * DAY,),
    ).fetchall()
    assert [r[0] for r in rows] == [anna]
    # max_sources cuts a cluster in runs, oldest first; a short rest waits.
    admin.execute(
        "update pgmem.settings set consolidate_max_sources = 2, consolidate_min_sources = 2"
        " where tenant_id = 'a'"
    )
    rows = conn.execute(
        "select memory_ids from pgmem.consolidation_clusters('alice', %s)", (T0 + 200 * DAY,)
    ).fetchall()
    assert [r[0] for r in rows] == [anna[:2]]


def test_stale_clusters_are_skipped_and_bad_arguments_refused(
    tenant_login: Login, admin: psycopg.Connection
) -> None:
    conn = tenant_login("a")
    sushi, _, _ = seed(admin, "a")
    admin.execute("update pgmem.memories set status = 'archived' where memory_id = %s", (sushi[0],))
    row = conn.execute(
        "select action, insight_id, sources"
        " from pgmem.consolidate('alice', %s, 'Likes sushi', null, 'llm', %s)",
        (sushi, T0 + 10 * DAY),
    ).fetchone()
    assert row == ("skipped", None, 4)
    assert conn.execute(
        "select count(*) from pgmem.memories where kind = 'semantic'"
    ).fetchone() == (0,)
    for args in ((sushi[1:], "poem"), ([sushi[1], sushi[1]], "llm"), ([], "llm")):
        with pytest.raises(psycopg.Error) as info:
            conn.execute(
                "select * from pgmem.consolidate('alice', %s::bigint[], 'Likes sushi', null, %s)",
                args,
            )
        assert info.value.sqlstate == "PM062"
    # With an LLM's text the insight says what the model wrote, and the sources point to it.
    row = conn.execute(
        "select action, insight_id, sources, source_action from pgmem.consolidate('alice', %s,"
        " 'Alice regularly eats sushi at Sushi Dai', null, 'llm', %s)",
        (sushi[1:], T0 + 10 * DAY),
    ).fetchone()
    assert row is not None and row[0] == "inserted" and row[2:] == (3, "lowered")
    insight = memory(admin, row[1])
    assert insight["content"] == "Alice regularly eats sushi at Sushi Dai"
    assert insight["source"] == "llm" and insight["metadata"]["method"] == "llm"
    # A second call with the same sources finds them consolidated.
    again = conn.execute(
        "select action from pgmem.consolidate('alice', %s, 'Alice likes sushi', null, 'llm', %s)",
        (sushi[1:], T0 + 10 * DAY),
    ).fetchone()
    assert again == ("skipped",)


def test_consolidation_stays_within_a_tenant(
    tenant_login: Login, admin: psycopg.Connection
) -> None:
    a, b = tenant_login("a"), tenant_login("b")
    seed(admin, "a")
    # b sees no cluster of a's subject, and its own marking queues nothing for a.
    assert b.execute(
        "select count(*) from pgmem.consolidation_clusters('alice', %s)", (T0 + 10 * DAY,)
    ).fetchone() == (0,)
    assert b.execute("select pgmem.mark_consolidation(%s)", (T0 + 10 * DAY,)).fetchone() == (0,)
    assert admin.execute("select count(*) from pgmem.inbox").fetchone() == (0,)
    # b cannot consolidate a's episodes by id: they are not its rows.
    ids = [
        r[0]
        for r in admin.execute(
            "select memory_id from pgmem.memories where tenant_id = 'a'"
            " and content like 'Had sushi%%' order by memory_id limit 4"
        )
    ]
    row = b.execute(
        "select action from pgmem.consolidate('alice', %s, 'Likes sushi', null, 'llm', %s)",
        (ids, T0 + 10 * DAY),
    ).fetchone()
    assert row == ("skipped",)
    assert a.execute(
        "select count(*) from pgmem.consolidation_clusters('alice', %s)", (T0 + 10 * DAY,)
    ).fetchone() == (1,)
    assert a.execute("select pgmem.mark_consolidation(%s)", (T0 + 10 * DAY,)).fetchone() == (1,)
    assert admin.execute("select tenant_id from pgmem.inbox").fetchall() == [("a",)]


def test_the_worker_writes_the_models_insight_and_falls_back_when_it_fails(
    admin: psycopg.Connection,
    dsn: str,
    embedder: LocalEmbedder,
    fake_llm: FakeLLM,  # noqa: F811  (the fixture imported above)
) -> None:
    admin.execute("select pgmem.create_tenant('a')")
    sushi, _, _ = seed(admin, "a")
    extractor = LLMExtractor.connect(base_url=fake_llm.url, timeout=5, max_retries=0)
    fake_llm.answer("Alice often has dinner at Sushi Dai.")
    with extractor:
        assert run_job(admin, T0 + 10 * DAY) == {"subjects": 1}
        Worker(dsn, embedder=embedder, llm=extractor).run(once=True)
    [(insight, sources)] = derived(admin).items()
    assert sources == set(sushi)
    row = memory(admin, insight)
    assert row["content"] == "Alice often has dinner at Sushi Dai."
    assert row["source"] == "llm" and row["metadata"]["method"] == "llm"
    # The model saw every episode of the cluster.
    assert all(f"dinner {i + 1}" in fake_llm.prompt() for i in range(4))
    result = admin.execute(
        "select payload -> 'result' from pgmem.inbox where status = 'done'"
    ).fetchone()
    assert result is not None and result[0]["method"] == "llm"
    assert "fallback_reason" not in result[0]

    # A failing model: the extractive digest, said so.
    fake_llm.answer(Reply(status=500))
    with LLMExtractor.connect(base_url=fake_llm.url, timeout=5, max_retries=0) as failing:
        text, method = insight_text(["a", "b"], "[extractive insight: no LLM; …] a | b", failing)
    assert (text, method) == ("[extractive insight: no LLM; …] a | b", "extractive")
    assert insight_text(["a", "b"], "digest", None) == ("digest", "extractive")
