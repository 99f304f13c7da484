"""Degrade, don't fail: with the embedding endpoint down (a closed port, or a server
answering HTTP 500), reads answer from full text and say so, writes keep what they
were told without vectors, and the worker embeds those once the endpoint is back.

The endpoints are real OpenAI-compatible HTTP servers on localhost (one answering,
one failing); the database is real."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import Db, Tenant
from http_stub import Answer, json_endpoint

from pgmem import Memory
from pgmem.embed import EmbeddingCache, OpenAIEmbedder
from pgmem.worker import Worker

DIMS = 384
MODEL = "stub-embed"
PGMEM = str(Path(sys.executable).with_name("pgmem"))


def word_vector(text: str) -> list[float]:
    """A unit vector from the text's words: texts sharing words point alike."""
    vector = [0.0] * DIMS
    for word in text.lower().split():
        digest = hashlib.sha256(word.strip(".,?!").encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % DIMS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm if any(vector) else 1.0 / math.sqrt(DIMS) for v in vector]


@dataclass
class Endpoint:
    base_url: str
    up: bool


@contextmanager
def serve(up: bool) -> Iterator[Endpoint]:
    """An embeddings endpoint on localhost: word vectors while ``up``, HTTP 500 when not."""
    state = Endpoint(base_url="", up=up)

    def answer(path: str, body: Any) -> Answer:
        if not state.up:
            return 500, {"error": {"message": "model server crashed"}}, {}
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": word_vector(t)}
            for i, t in enumerate(texts)
        ]
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        return 200, {"object": "list", "model": MODEL, "data": data, "usage": usage}, {}

    with json_endpoint(answer) as state.base_url:
        yield state


@pytest.fixture
def healthy() -> Iterator[OpenAIEmbedder]:
    """The embedder of a working endpoint (the one that is down, back up)."""
    with serve(up=True) as endpoint:
        yield embedder(endpoint.base_url)


def closed_port() -> int:
    """A localhost port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def embedder(base_url: str) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        model=MODEL,
        dims=DIMS,
        base_url=base_url,
        api_key="test",
        max_retries=0,
        timeout=5,
        cache=EmbeddingCache(0),  # every call reaches the endpoint
    )


# Both ways an endpoint fails: nobody answers, or it answers with an error.
OUTAGES = ["closed_port", "http_500"]


@pytest.fixture(params=OUTAGES)
def down(request: pytest.FixtureRequest) -> Iterator[OpenAIEmbedder]:
    """An embedder of the same model whose endpoint fails."""
    if request.param == "closed_port":
        yield embedder(f"http://127.0.0.1:{closed_port()}/v1")
        return
    with serve(up=False) as endpoint:
        yield embedder(endpoint.base_url)


def stored_vectors(t: Tenant, subject: str) -> list[tuple[str, bool]]:
    return [
        (content, has_vector)
        for content, has_vector in t.conn.execute(
            "select content, embedding is not null from pgmem.memories"
            " where subject = %s and status = 'active' order by memory_id",
            (subject,),
        )
    ]


def test_reads_answer_from_full_text_and_say_so(
    db: Db,
    new_tenant: Callable[[], Tenant],
    healthy: OpenAIEmbedder,
    down: OpenAIEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    t = new_tenant()
    stored = Memory(conn=t.conn, embedder=healthy, llm=False)
    stored.add("Alice lives in Lisbon near the river.", "alice", infer=False)
    stored.add("Alice plays the cello on Sundays.", "alice", infer=False)
    memory = Memory(conn=t.conn, embedder=down, llm=False)
    chat = memory.session("c1", "alice")
    chat.append("user", "Remind me where I live.", extract=False)

    with caplog.at_level(logging.WARNING, logger="pgmem"):
        rows = memory.search("Where does Alice live? Lisbon", "alice", k=5)
        block = memory.context("Where does Alice live? Lisbon", "alice")
        prompt = chat.prompt("Where does Alice live? Lisbon")

    assert rows and "Lisbon" in rows[0]["content"]
    assert all(r["similarity"] is None for r in rows)  # words alone ranked them
    assert "Lisbon" in block and "Lisbon" in prompt
    for answer in (rows, block, prompt):
        assert answer.degraded
        assert answer.degraded_reason and "embedder unavailable" in answer.degraded_reason
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3 and all("degraded" in r.getMessage() for r in warnings)

    # The same reads with the embedder answering: not degraded.
    fine = stored.search("Where does Alice live? Lisbon", "alice", k=5)
    assert not fine.degraded and fine.degraded_reason is None
    assert fine[0]["similarity"] is not None
    assert not stored.context("Lisbon", "alice").degraded
    assert not stored.session("c1", "alice").prompt("Lisbon").degraded


def on_the_endpoints_model(t: Tenant, healthy: OpenAIEmbedder) -> Tenant:
    """``t`` with the endpoint's model as its own: one vector of it stored while up."""
    Memory(conn=t.conn, embedder=healthy, llm=False).add(
        "Alice likes green tea.", "alice", infer=False
    )
    return t


def test_a_write_keeps_its_facts_and_the_worker_embeds_them_later(
    db: Db, new_tenant: Callable[[], Tenant], healthy: OpenAIEmbedder, down: OpenAIEmbedder
) -> None:
    t = on_the_endpoints_model(new_tenant(), healthy)
    results = Memory(conn=t.conn, embedder=down, llm=False).add(
        "I live in Lisbon. My sister is called Marta.", "alice"
    )
    assert results.degraded
    assert {r["action"] for r in results} == {"inserted"}
    kept = stored_vectors(t, "alice")
    assert any("Lisbon" in c and not v for c, v in kept), kept
    assert any("Marta" in c and not v for c, v in kept), kept
    # Full text finds them meanwhile.
    found = Memory(conn=t.conn, embedder=down, llm=False).search("Lisbon", "alice")
    assert found.degraded and any("Lisbon" in r["content"] for r in found)

    # The endpoint is back: the worker's embed pass gives them their vectors.
    Worker(t.dsn, llm=None, embedder=healthy).run(once=True)
    assert all(v for _, v in stored_vectors(t, "alice")), stored_vectors(t, "alice")
    hits = Memory(conn=t.conn, embedder=healthy, llm=False).search(
        "Where does Alice live? Lisbon", "alice"
    )
    assert not hits.degraded and hits[0]["similarity"] is not None


def test_the_worker_stores_a_turn_when_the_embedder_is_down(
    db: Db, new_tenant: Callable[[], Tenant], healthy: OpenAIEmbedder, down: OpenAIEmbedder
) -> None:
    t = on_the_endpoints_model(new_tenant(), healthy)
    chat = Memory(conn=t.conn, embedder=False, llm=False).session("c1", "alice")
    chat.append("user", "I moved to Porto last month and I am allergic to peanuts.")

    stats = Worker(t.dsn, llm=None, embedder=down).run(once=True)
    assert stats.done == 1 and stats.failed == 0
    (result,) = t.conn.execute(
        "select payload -> 'result' from pgmem.inbox where job = 'turn' and subject = 'alice'"
    ).fetchone()
    assert "embedder unavailable" in result["degraded"]
    kept = stored_vectors(t, "alice")
    assert any("Porto" in c and not v for c, v in kept), kept
    assert any("peanut" in c.lower() and not v for c, v in kept), kept

    Worker(t.dsn, llm=None, embedder=healthy).run(once=True)
    assert all(v for _, v in stored_vectors(t, "alice")), stored_vectors(t, "alice")


def test_cli_warns_on_stderr_and_still_answers(db: Db, new_tenant: Callable[[], Tenant]) -> None:
    t = new_tenant()
    Memory(conn=t.conn, embedder=False, llm=False).add(
        "Alice lives in Lisbon.", "alice", infer=False
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PGMEM_DSN": t.dsn,
        "PGMEM_EMBEDDER": "openai",
        "PGMEM_EMBED_MODEL": MODEL,
        "PGMEM_EMBED_DIMS": str(DIMS),
        "PGMEM_EMBED_MAX_RETRIES": "0",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1",
        "OPENAI_API_KEY": "test",
    }
    for args in (
        ["search", "Lisbon"],
        ["context", "Lisbon"],
        ["prompt", "c1", "Lisbon"],
    ):
        done = subprocess.run(
            [PGMEM, *args, "--user", "alice"], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (args, done.stderr)
        assert "Lisbon" in done.stdout, (args, done.stdout)
        assert "warning: degraded: embedder unavailable" in done.stderr, (args, done.stderr)
    as_json = subprocess.run(
        [PGMEM, "context", "Lisbon", "--user", "alice", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(as_json.stdout)["degraded"] is True


def test_mcp_tools_flag_a_degraded_answer(
    db: Db, new_tenant: Callable[[], Tenant], down: OpenAIEmbedder
) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed (make setup installs it)")
    from mcp import Client

    from pgmem.integrations.mcp_server import bind, build_server

    t = new_tenant()
    Memory(conn=t.conn, embedder=False, llm=False).add(
        "Alice lives in Lisbon.", "alice", infer=False
    )
    server = build_server(bind(Memory(conn=t.conn, embedder=down, llm=False), subject="alice"))

    async def body() -> None:
        async with Client(server) as client:
            for tool, args in (
                ("recall", {"query": "Lisbon"}),
                ("context", {"query": "Lisbon"}),
                ("prompt", {"session_id": "c1", "query": "Lisbon"}),
            ):
                result = await client.call_tool(tool, args)
                assert not result.is_error, result.content
                assert result.meta and result.meta["pgmem/degraded"] is True, tool
                assert "embedder unavailable" in result.meta["pgmem/degraded_reason"]
                first = getattr(result.content[0], "text", "")
                assert first.startswith("degraded:"), (tool, first)
                assert "Lisbon" in json.dumps(result.structured_content), tool

    anyio.run(body)
