"""Memory's pooled connections: a tenant bound once per pooled connection never leaks
to another tenant, whether each client has its own pool or two share the caller's."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from pgmem import Memory


@pytest.fixture
def service_dsn(dsn: str, admin: psycopg.Connection) -> str:
    """Tenants acme and bravo; a DSN acting as pgmem_service (row-level security on)."""
    admin.execute("select pgmem.create_tenant('acme')")
    admin.execute("select pgmem.create_tenant('bravo')")
    return make_conninfo(dsn, options="-c role=pgmem_service")


def _contents(memory: Memory, user: str) -> set[str]:
    return {r["content"] for r in memory.get_all(user, status=None)}


def test_own_pools_bind_each_connection_once_and_never_leak(service_dsn: str) -> None:
    with (
        Memory(service_dsn, tenant="acme", embedder=False, pool_size=3) as acme,
        Memory(service_dsn, tenant="bravo", embedder=False, pool_size=3) as bravo,
    ):
        acme.add("acme secret", user_id="u", infer=False)
        bravo.add("bravo secret", user_id="u", infer=False)

        # Many threads at once: several pooled connections per client, each bound once.
        def both(i: int) -> tuple[set[str], set[str]]:
            if i % 2:
                acme.add(f"acme note {i}", user_id="u", infer=False)
            else:
                bravo.add(f"bravo note {i}", user_id="u", infer=False)
            return _contents(acme, "u"), _contents(bravo, "u")

        with ThreadPoolExecutor(6) as threads:
            for seen_acme, seen_bravo in threads.map(both, range(24)):
                assert seen_acme and all(c.startswith("acme") for c in seen_acme)
                assert seen_bravo and all(c.startswith("bravo") for c in seen_bravo)
        assert len(_contents(acme, "u")) == 1 + 12 and len(_contents(bravo, "u")) == 1 + 12
        assert {r["content"] for r in bravo.search("secret", "u")} == {"bravo secret"}
        # Every pooled connection of acme's has acme bound on its session.
        pool = acme._own_pool
        assert pool is not None and 1 <= pool.get_stats()["pool_size"] <= 3
        with acme.transaction() as conn:
            assert conn.execute("select pgmem.current_tenant()").fetchone() == ("acme",)


def test_two_tenants_sharing_a_callers_pool_never_see_each_other(service_dsn: str) -> None:
    # One connection serves both clients in turn: only a per-call binding keeps them apart.
    with ConnectionPool(service_dsn, min_size=1, max_size=1, kwargs={"autocommit": True}) as pool:
        acme = Memory(pool=pool, tenant="acme", embedder=False)
        bravo = Memory(pool=pool, tenant="bravo", embedder=False)
        for i in range(3):
            acme.add(f"acme fact {i}", user_id="u", infer=False)
            bravo.add(f"bravo fact {i}", user_id="u", infer=False)
            assert _contents(acme, "u") == {f"acme fact {j}" for j in range(i + 1)}
            assert _contents(bravo, "u") == {f"bravo fact {j}" for j in range(i + 1)}
        # The per-call binding is local to its transaction: the session keeps none.
        with pool.connection() as conn:
            assert conn.execute("select pgmem.current_tenant()").fetchone() == (None,)
        acme.close()  # never closes the caller's pool
        assert not pool.closed


def test_own_pool_refuses_an_unknown_tenant_at_once(service_dsn: str) -> None:
    with Memory(service_dsn, tenant="nobody", embedder=False) as memory:
        with pytest.raises(psycopg.Error) as caught:
            memory.get_all("u")
        assert caught.value.sqlstate == "PM002"


def test_pool_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="one of dsn, conn and pool"):
        Memory("postgresql:///x", pool=ConnectionPool("postgresql:///x", open=False))
    with pytest.raises(ValueError, match="pool_size"):
        Memory(pool_size=0)
