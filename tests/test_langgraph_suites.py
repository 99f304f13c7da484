"""LangGraph's own store test suites against PgmemStore.

The tests shipped in the sdists of the installed langgraph-checkpoint (its
``tests/test_store.py``) and langgraph-checkpoint-postgres (``tests/test_store.py``,
``tests/test_async_store.py``) are fetched from PyPI at test time, never kept here,
and run in a pytest of their own with the store replaced by a :class:`PgmemStore` on a
fresh tenant: InMemoryStore's suite as is, PostgresStore's in three connection modes
(the client's own pool, the caller's pool, the caller's connection). The graph tests
of the installed langgraph that take a store (its ``sync_store`` and ``async_store``
fixtures, in ``tests/test_pregel.py`` and ``tests/test_pregel_async.py``) run with
those fixtures giving a PgmemStore.

What they test that PgmemStore does not offer, by design or not yet, is deselected
by name, each with its reason (:data:`NOT_OFFERED`); everything else must pass.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.postgres", reason="the dev extra is not installed")

# Tests of features PgmemStore does not offer, and why (README, "From LangGraph").
NOT_OFFERED = {
    # Vector search with the caller's embeddings and index config (their
    # _create_vector_store fixtures, which build a PostgresStore): pgmem embeds with
    # the tenant's model. Those fixtures are replaced by a skip.
    "index config": ["test_embed_with_path"],
    # AsyncPostgresStore's own mechanics: its sync methods refuse to run on the event
    # loop, and it checks out one pool connection per abatch. PgmemStore is a sync
    # store whose async methods run it in a thread.
    "AsyncPostgresStore internals": [
        "test_no_running_loop",
        "test_abatch_uses_single_pool_checkout",
    ],
    # PostgresStore's TTL internals: they stop its sweeper thread and read and write
    # its own store table (expires_at) through its cursor. PgmemStore's TTL is
    # pgmem's expiry, swept by the archive job.
    "PostgresStore's TTL sweeper and table": ["omit_expired"],
}

CONFTEST = """
import os
import uuid
from contextlib import asynccontextmanager, contextmanager

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from pgmem import Memory
from pgmem.integrations.langgraph import PgmemStore

DSN = os.environ["PGMEM_SUITE_DSN"]


def new_tenant() -> str:
    name = "lg" + uuid.uuid4().hex[:12]
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("select pgmem.create_tenant(%s)", (name,))
    return name


def memory(**kwargs) -> Memory:
    return Memory(tenant=new_tenant(), embedder=False, llm=False, **kwargs)
"""

CHECKPOINT_CONFTEST = (
    CONFTEST
    + '''

import langgraph.store.memory


class TenantStore(PgmemStore):
    """InMemoryStore's place: a PgmemStore on a fresh tenant."""

    def __init__(self, **options):
        if options:
            pytest.skip(f"PgmemStore takes no {sorted(options)}")
        super().__init__(memory(dsn=DSN))


langgraph.store.memory.InMemoryStore = TenantStore
'''
)

POSTGRES_CONFTEST = (
    CONFTEST
    + """
from tests.embed_test_utils import CharacterEmbeddings

DEFAULT_URI = DEFAULT_POSTGRES_URI = DSN
VECTOR_TYPES = ["vector", "halfvec"]


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


@pytest.fixture(params=["own pool", "caller's pool", "caller's connection"])
def store(request):
    if request.param == "own pool":
        with memory(dsn=DSN) as client:
            yield PgmemStore(client)
    elif request.param == "caller's pool":
        with ConnectionPool(DSN, kwargs={"autocommit": True}) as pool:
            yield PgmemStore(memory(pool=pool))
    else:
        with psycopg.connect(DSN, autocommit=True) as conn:
            yield PgmemStore(memory(conn=conn))


@contextmanager
def _no_vector_store(*args, **kwargs):
    pytest.skip("a caller's index config: PgmemStore embeds with the tenant's model")
    yield


@asynccontextmanager
async def _no_async_vector_store(*args, **kwargs):
    pytest.skip("a caller's index config: PgmemStore embeds with the tenant's model")
    yield


def pytest_collection_modifyitems(session, config, items):
    for module in {item.module for item in items}:
        if hasattr(module, "_create_vector_store"):
            is_async = module.__name__.endswith("test_async_store")
            module._create_vector_store = _no_async_vector_store if is_async else _no_vector_store
"""
)


def _sdist_tests(distribution: str, into: Path) -> Path:
    """The tests folder of the installed version's sdist, fetched from PyPI."""
    version = importlib.metadata.version(distribution)
    download = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "--disable-pip-version-check", "-q", "-d", str(into), f"{distribution}=={version}"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert download.returncode == 0, download.stderr
    (archive,) = into.glob("*.tar.gz")
    with tarfile.open(archive) as sdist:
        sdist.extractall(into, filter="data")
    (tests,) = into.glob("*/tests")
    return tests


GRAPH_CONFTEST = (
    CONFTEST
    + """
from langgraph.checkpoint.memory import InMemorySaver

STORES = {"sync_store", "async_store"}


def pytest_collection_modifyitems(config, items):
    # Only the graph tests that take a store: the others test LangGraph alone.
    kept = [item for item in items if STORES & set(getattr(item, "fixturenames", ()))]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def deterministic_uuids(mocker):
    side_effect = (uuid.UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    return mocker.patch("uuid.uuid4", side_effect=side_effect)


@pytest.fixture(params=["sync", "async", "exit"])
def durability(request):
    return request.param


@pytest.fixture
def sync_store():
    with memory(dsn=DSN) as client:
        yield PgmemStore(client)


@pytest.fixture
async def async_store():
    with memory(dsn=DSN) as client:
        yield PgmemStore(client)


@pytest.fixture
def sync_checkpointer():
    yield InMemorySaver()


@pytest.fixture
async def async_checkpointer():
    yield InMemorySaver()
"""
)


def _run(root: Path, dsn: str, *files: str) -> tuple[str, dict[str, int]]:
    names = [name for reasons in NOT_OFFERED.values() for name in reasons]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
         "-o", "asyncio_default_fixture_loop_scope=function", "-o", "filterwarnings=",
         "-k", " and ".join(f"not {name}" for name in names), *files],
        cwd=root, env=os.environ | {"PGMEM_SUITE_DSN": dsn}, capture_output=True, text=True,
        timeout=1800, check=False,
    )  # fmt: skip
    tail = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    counts = {
        word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?|skipped)", tail)
    }
    return result.stdout[-6000:] + result.stderr[-2000:], counts


def test_langgraph_checkpoint_store_suite(tmp_path: Path, dsn: str) -> None:
    tests = _sdist_tests("langgraph-checkpoint", tmp_path / "sdist")
    root = tmp_path / "run"
    shutil.copytree(tests, root / "tests")
    (root / "conftest.py").write_text(CHECKPOINT_CONFTEST)
    output, counts = _run(root, dsn, "tests/test_store.py")
    assert counts.get("failed", 0) == 0 and "error" not in counts and "errors" not in counts, output
    # The suite ran: InMemoryStore's tests, not a collection of skips.
    assert counts.get("passed", 0) >= 90, output


def test_langgraph_postgres_store_suites(tmp_path: Path, dsn: str) -> None:
    tests = _sdist_tests("langgraph-checkpoint-postgres", tmp_path / "sdist")
    root = tmp_path / "run"
    shutil.copytree(tests, root / "tests")
    (root / "tests" / "conftest.py").write_text(POSTGRES_CONFTEST)
    for name in ("test_store.py", "test_async_store.py"):
        path = root / "tests" / name
        # Their store fixture builds a PostgresStore: the conftest's takes its place.
        text = re.sub(
            r"^(async )?def store\(", r"\1def _their_store(", path.read_text(), flags=re.M
        )
        path.write_text(text)
    output, counts = _run(root, dsn, "tests/test_store.py", "tests/test_async_store.py")
    assert counts.get("failed", 0) == 0 and "error" not in counts and "errors" not in counts, output
    assert counts.get("passed", 0) >= 90, output


def test_langgraph_graph_tests_that_take_a_store(tmp_path: Path, dsn: str) -> None:
    tests = _sdist_tests("langgraph", tmp_path / "sdist")
    root = tmp_path / "run"
    shutil.copytree(tests, root / "tests")
    # Their conftest builds stores and checkpointers on docker services: ours
    # gives a PgmemStore and LangGraph's in-memory checkpointer.
    (root / "tests" / "conftest.py").write_text(GRAPH_CONFTEST)
    output, counts = _run(root, dsn, "tests/test_pregel.py", "tests/test_pregel_async.py")
    assert counts.get("failed", 0) == 0 and "error" not in counts and "errors" not in counts, output
    # Two sync and two async graphs write and read through the store.
    assert counts.get("passed", 0) >= 4, output
