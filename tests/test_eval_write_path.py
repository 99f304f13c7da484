"""`pgmem eval locomo --write-path`: turns through Memory.add and the worker, what is lost.

Real database, the bag-of-words embedder of tests/test_eval.py; the CLI test runs the
default local model on the small LoCoMo sample.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from test_eval import WordHashEmbedder, _database_exists, locomo_file, locomo_sample  # noqa: F401
from typer.testing import CliRunner

from pgmem.cli.app import app
from pgmem.client import Memory
from pgmem.lab import eval as ev
from pgmem.lab import write_path as wp

TENANT = "wp-test"


def _turns(session: int, texts: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [
        {"speaker": speaker, "dia_id": f"D{session}:{n}", "text": text}
        for n, (speaker, text) in enumerate(texts, start=1)
    ]


def small_conversation(tmp_path: Path) -> ev.Conversation:
    """Turns of unrelated words (no two alike to the word-hash embedder), and one exact
    re-send: D2:1 repeats D1:3."""
    sample = {
        "sample_id": "conv-wp",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "10:05 am on 5 June, 2023",
            "session_1": _turns(
                1,
                [
                    ("Ana", "I adopted a grey cat named Pixel."),
                    ("Ben", "My brother plays cello in Vienna."),
                    ("Ana", "Thanks!"),
                ],
            ),
            "session_2_date_time": "2:30 pm on 20 August, 2023",
            "session_2": _turns(2, [("Ana", "Thanks!"), ("Ben", "Our kitchen needs new tiles.")]),
        },
        "qa": [],
    }
    path = tmp_path / "small.json"
    path.write_text(json.dumps([sample]))
    [conversation] = ev.load_locomo(path)
    return conversation


@pytest.fixture
def memory(dsn: str) -> Iterator[tuple[Memory, psycopg.Connection[dict[str, Any]]]]:
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("select pgmem.create_tenant(%s)", (TENANT,))
    with ev.tenant_connection(dsn, TENANT) as conn:
        yield Memory(conn=conn, tenant=TENANT, embedder=WordHashEmbedder(), llm=False), conn


def test_memory_dia_ids_reads_the_list_and_the_single_id() -> None:
    assert ev.memory_dia_ids({"dia_id": "D2:1"}) == ["D2:1"]
    assert ev.memory_dia_ids({"dia_ids": ["D1:6", "D2:3"], "dia_id": "D1:6"}) == ["D1:6", "D2:3"]
    assert ev.memory_dia_ids({"dia_ids": ["D1:1"], "dia_id": "D3:3"}) == ["D1:1", "D3:3"]
    assert ev.memory_dia_ids({"dia_ids": "D1:1", "dia_id": 7}) == []
    assert ev.memory_dia_ids(None) == ev.memory_dia_ids({}) == []


def test_lost_sources_are_the_turns_no_active_memory_holds(
    memory: tuple[Memory, psycopg.Connection[dict[str, Any]]], tmp_path: Path
) -> None:
    client, conn = memory
    rows = ev.turn_rows([small_conversation(tmp_path)])
    position = {row.dia_id: n for n, row in enumerate(rows)}
    actions = wp.send_turns(client, rows, infer=False)
    assert len(actions) == len(rows) == 5 and all(actions)
    # Distinct turns are kept, and the re-sent "Ana: Thanks!" is held by the memory
    # that said it first, whether or not one names D2:1.
    assert wp.lost_sources(conn, rows) == []

    # A forgotten turn is lost: a deleted memory holds nothing.
    pixel = client.get_all("conv-wp", filters={"dia_id": "D1:1"})
    assert pixel and all(client.delete(m["memory_id"]) for m in pixel)
    assert wp.lost_sources(conn, rows) == [position["D1:1"]]

    # A memory naming it in a dia_ids list (as a merge may carry ids over) holds it again.
    cello = client.get_all("conv-wp", filters={"dia_id": "D1:2"})[0]
    client.update(cello["memory_id"], metadata={"dia_ids": ["D1:2", "D1:1"]})
    assert wp.lost_sources(conn, rows) == []

    # By text: the same words up to case, space and punctuation hold a turn; other
    # words do not, nor the same words of another subject.
    at = dt.datetime(2023, 9, 1, tzinfo=dt.UTC)
    extra = [
        ev.TurnRow("conv-wp", "conv-wp:session_3", 3, 0, "D3:1", "Ana", "ana —  THANKS", at),
        ev.TurnRow("conv-wp", "conv-wp:session_3", 3, 1, "D3:2", "Ben", "Ben: never said", at),
        ev.TurnRow("conv-other", "conv-other:session_1", 1, 0, "D1:3", "Ana", "Ana: Thanks!", at),
    ]
    assert wp.lost_sources(conn, [*rows, *extra]) == [len(rows) + 1, len(rows) + 2]


def _lost_in_sql(
    admin: psycopg.Connection[dict[str, Any]], tenant: str, rows: list[ev.TurnRow]
) -> int:
    """The lost-turn count, computed apart from pgmem.lab.write_path."""
    row = admin.execute(
        """
        select count(*) as lost
        from unnest(%(subjects)s::text[], %(ids)s::text[], %(texts)s::text[])
            as t(subject, dia_id, content)
        where not exists (
            select from pgmem.memories as m
            where m.tenant_id = %(tenant)s and m.subject = t.subject and m.status = 'active'
              and (m.metadata ->> 'dia_id' = t.dia_id
                   or coalesce(m.metadata -> 'dia_ids', '[]') ? t.dia_id
                   or pgmem._normalize(m.content) = pgmem._normalize(t.content)))
        """,
        {
            "tenant": tenant,
            "subjects": [r.subject for r in rows],
            "ids": [r.dia_id for r in rows],
            "texts": [r.content for r in rows],
        },
    ).fetchone()
    assert row is not None
    return int(row["lost"])


def test_write_path_report_puts_the_direct_store_beside_both_passes(
    dsn: str,
    locomo_file: Path,  # noqa: F811
) -> None:
    conversations = ev.load_locomo(locomo_file)
    rows = ev.turn_rows(conversations)
    report = wp.evaluate_write_path(dsn, conversations, WordHashEmbedder())
    assert [p.name for p in report.passes] == ["direct", "infer", "as-is"]
    assert report.turns == len(rows) == 37
    assert report.questions == {"single-hop": 1, "multi-hop": 1, "open-domain": 1}
    direct, *written = report.passes
    # The direct store holds every turn by construction and decides nothing.
    assert direct.lost == [] and direct.decisions == {} and direct.worker == {}
    assert direct.memory_sources == {"import": 36}
    with psycopg.connect(dsn, row_factory=dict_row) as admin:
        for result in report.passes:
            assert result.sources == 37
            assert len(result.lost) == _lost_in_sql(admin, result.tenant, rows)
            assert 0.0 <= result.lost_share <= 1.0
            assert sum(result.lost_by_decision.values()) == len(result.lost)
            overall = result.result.metrics["overall"]
            assert 0.0 <= overall["R@5"] <= overall["R@10"] <= 1.0
            assert 0.0 <= overall["MRR"] <= 1.0
            counts = admin.execute(
                "select status, count(*) as n from pgmem.memories where tenant_id = %s"
                " group by status",
                (result.tenant,),
            ).fetchall()
            assert result.statuses == {r["status"]: r["n"] for r in counts}
            assert sum(result.memory_sources.values()) == sum(result.statuses.values())
    for result in written:
        # Every add returned at least one decision or was counted as returning none.
        assert sum(result.decisions.values()) >= 37
        # The worker left nothing pending, and failed nothing.
        assert not any(key.endswith(" pending") for key in result.inbox)
        assert result.worker["failed"] == 0
        jobs = sum(n for key, n in result.inbox.items())
        assert result.worker["jobs"] >= jobs
    assert written[1].result.mode == direct.result.mode == wp.MODE
    data = json.loads(json.dumps(report.as_dict()))
    assert [p["name"] for p in data["passes"]] == ["direct", "infer", "as-is"]
    assert data["passes"][2]["lost"] == len(written[1].lost)


@pytest.mark.slow
def test_cli_write_path_runs_end_to_end(server_dsn: str, tmp_path: Path) -> None:
    two = locomo_sample() * 2
    two[1] = {**two[1], "sample_id": "conv-t2"}
    path = tmp_path / "two.json"
    path.write_text(json.dumps(two))
    name = f"pgmem_eval_test_{uuid.uuid4().hex[:8]}"
    env = {
        "PGMEM_EMBEDDER": "",
        "PGMEM_EMBED_MODEL": "",
        "OPENAI_API_KEY": "",
        "OPENAI_BASE_URL": "",
    }
    args = ["eval", "locomo", str(path), "--dsn", server_dsn, "--database", name, "--write-path"]
    runner = CliRunner()
    result = runner.invoke(app, [*args, "--limit-conversations", "1", "--json"], env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["conversations"], data["turns"], data["mode"]) == (1, 37, "hybrid")
    assert data["embedder"] == "multilingual-e5-small-q4 (384 dims)"
    assert [p["name"] for p in data["passes"]] == ["direct", "infer", "as-is"]
    assert all(p["sources"] == 37 for p in data["passes"])
    assert not _database_exists(server_dsn, name)

    result = runner.invoke(app, [*args, "--limit-conversations", "1"], env=env)
    assert result.exit_code == 0, result.output
    for label in ("lost turns", "R@5", "MRR", "add: ", "status: active", "write, as-is"):
        assert label in result.stdout

    result = runner.invoke(app, [*args, "-m", "text"], env=env)
    assert result.exit_code == 1 and "leave out --modes" in result.stderr
