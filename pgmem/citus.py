"""A local Citus cluster under PGMEM_HOME, and the distribution of the pgmem schema.

The coordinator is the embedded server itself (PGMEM_HOME, PGMEM_PORT), so
every other command reaches the cluster through it unchanged. Worker i is
its own cluster in PGMEM_HOME/citus-workers/worker-<i> on PGMEM_PORT + i.
Each node's home carries server.CITUS_MARKER, so whichever command starts
it preloads citus. Nodes reach each other over their unix sockets (local
trust), which keeps tenant login roles password-protected over TCP.

The distribution itself is SQL (pgmem.distribute() in sql/functions/90_citus.sql);
this module only builds and registers nodes. An external Citus cluster is used
through PGMEM_DSN like any server: `pgmem migrate` distributes there too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmem import schema, server
from pgmem.config import Config
from pgmem.queries import citus as Q

WORKERS_DIR = "citus-workers"
DEFAULT_WORKERS = 2


@dataclass(frozen=True)
class Node:
    role: str  # 'coordinator' or 'worker-<i>'
    config: Config

    @property
    def socket_dir(self) -> str:
        return str(server.locate(self.config).socket_dir)


def nodes(config: Config, workers: int | None = None) -> list[Node]:
    """The coordinator and its workers: `workers` of them, or those on disk."""
    count = len(_worker_homes(config)) if workers is None else workers
    found = [Node("coordinator", config)]
    for index in range(1, count + 1):
        home = config.home / WORKERS_DIR / f"worker-{index}"
        found.append(Node(f"worker-{index}", replace(config, home=home, port=config.port + index)))
    return found


def is_local_cluster(config: Config) -> bool:
    """Whether PGMEM_HOME holds a local Citus cluster (`pgmem db start --citus`)."""
    return not config.dsn and (config.home / server.CITUS_MARKER).is_file()


def start(config: Config, workers: int = DEFAULT_WORKERS) -> list[tuple[Node, bool]]:
    """Creates (first time) and starts the coordinator and `workers` workers, then registers
    the workers with the coordinator. Returns each node and whether this call started it."""
    if config.dsn:
        raise server.ServerError(f"{server.EXTERNAL_MESSAGE}: {server.redact(config.dsn)}")
    if workers < 1:
        raise server.ServerError("a Citus cluster needs at least one worker")
    existing = len(_worker_homes(config))
    if existing > workers:
        raise server.ServerError(
            f"PGMEM_HOME already has {existing} Citus workers; start with --citus {existing} "
            "(removing workers means draining them first: docs/scaling.md)"
        )
    _require_citus()
    cluster = nodes(config, workers)
    results = []
    # Workers first: the coordinator registers them once it runs.
    for node in [*cluster[1:], cluster[0]]:
        server._make_dirs(node.config.home)
        (node.config.home / server.CITUS_MARKER).write_text(
            "Written by `pgmem db start --citus`: this cluster preloads citus.\n"
        )
        results.append((node, server.start(node.config)))
    _register(cluster)
    return results


def stop(config: Config) -> list[tuple[Node, bool]]:
    """Stop the coordinator first (no new distributed work), then the workers."""
    return [(node, server.stop(node.config)) for node in nodes(config)]


def statuses(config: Config) -> list[tuple[Node, server.Status]]:
    return [(node, server.status(node.config)) for node in nodes(config)]


def _worker_homes(config: Config) -> list[Path]:
    folder = config.home / WORKERS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if re.fullmatch(r"worker-\d+", p.name))


def _require_citus() -> None:
    libdir = server._pkglibdir(server.find_binaries().bindir)
    if not (libdir / "citus.so").is_file():
        raise server.ServerError(
            f"Citus is not installed ({libdir}/citus.so is missing); run `make citus`"
        )


def _register(cluster: list[Node]) -> None:
    """citus extension on every node, the coordinator's host, and each worker once."""
    coordinator = cluster[0]
    for node in cluster:
        with psycopg.connect(server.dsn(node.config), autocommit=True) as conn:
            row = conn.execute(Q.PRELOADED).fetchone()
            if row is None or "citus" not in row[0].split(","):
                # It ran before it became a Citus node: start() did not restart it.
                raise server.ServerError(
                    f"the {node.role} on port {node.config.port} runs without citus loaded; "
                    "`pgmem db stop`, then `pgmem db start --citus N` again"
                )
            conn.execute(Q.CREATE_CITUS)
    with psycopg.connect(server.dsn(coordinator.config), autocommit=True) as conn:
        conn.execute(Q.SET_COORDINATOR, (coordinator.socket_dir, coordinator.config.port))
        for node in cluster[1:]:
            registered = conn.execute(
                Q.NODE_REGISTERED, (node.socket_dir, node.config.port)
            ).fetchone()
            if registered is None:
                conn.execute(Q.ADD_NODE, (node.socket_dir, node.config.port))


# -- the schema on a Citus coordinator ----------------------------------------

# Migrations create objects as pgmem_admin (a NOLOGIN role) inside one
# transaction; with DDL propagation on, Citus would open worker connections as
# that role. So revisions and sql/ run on the coordinator alone, and
# pgmem.distribute() then copies to the workers what they need.
NO_PROPAGATION = "-c citus.enable_ddl_propagation=off"


def has_citus(dsn: str) -> bool:
    """Whether the database at dsn has the citus extension (a Citus coordinator)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(Q.HAS_CITUS)
        return bool(row.fetchone() == (True,))


def upgrade(dsn: str, revision: str = "head", dims: int | None = None) -> list[tuple[object, ...]]:
    """Migrate a Citus coordinator, then distribute by tenant; pgmem.distribute()'s rows."""
    options = conninfo_to_dict(dsn).get("options") or ""
    schema.upgrade(
        make_conninfo(dsn, options=f"{options} {NO_PROPAGATION}".strip()), revision, dims
    )
    with psycopg.connect(dsn) as conn:
        # One transaction: its SET LOCAL statements reach the workers.
        return conn.execute(Q.DISTRIBUTE).fetchall()
