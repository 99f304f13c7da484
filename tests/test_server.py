"""The embedded server, started and stopped for real in throwaway homes.

Each test uses its own PGMEM_HOME and a free port, never ./.pgmem or 54329,
which the rest of the suite shares.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from typer.testing import CliRunner

from pgmem import server
from pgmem.cli.app import app
from pgmem.config import Config

PGMEM = Path(sys.executable).parent / "pgmem"
IS_ROOT = os.geteuid() == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_stopped(config: Config) -> server.Status:
    # SIGKILL is delivered asynchronously: the postmaster lingers for a moment.
    deadline = time.monotonic() + 10
    while (current := server.status(config)).running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not current.running
    return current


def open_home() -> Path:
    """A home the postgres OS user can reach (pytest's tmp_path is mode 700 for root)."""
    home = Path(tempfile.mkdtemp(prefix="pgmem-test-"))
    home.chmod(0o755)
    return home


def cleanup(config: Config) -> None:
    cluster = server.locate(config)
    try:
        server.stop(config)
    finally:
        if cluster.root != config.home and cluster.root.parent == server.FALLBACK_ROOT:
            shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def closed_config(tmp_path: Path) -> Iterator[Config]:
    """A home under tmp_path: for root a closed folder, so the cluster is relocated."""
    config = Config(home=tmp_path / "home", port=free_port(), database="pgmem_t", dsn=None)
    yield config
    cleanup(config)


@pytest.fixture
def open_config() -> Iterator[Config]:
    home = open_home()
    config = Config(home=home / "home", port=free_port(), database="pgmem", dsn=None)
    yield config
    try:
        cleanup(config)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_lifecycle_survives_kill_9(closed_config: Config) -> None:
    config = closed_config
    assert server.status(config).initialized is False

    assert server.start(config) is True
    current = server.status(config)
    assert current.running
    if IS_ROOT:
        # tmp_path is closed to the postgres OS user: the CI-under-/root case.
        assert current.cluster.root.parent == server.FALLBACK_ROOT
        assert current.cluster.relocated

    with psycopg.connect(server.dsn(config)) as conn:
        assert conn.execute("select current_database()").fetchone() == (config.database,)
        names = {row[0] for row in conn.execute("select name from pg_available_extensions")}
        assert {"vector", "pg_cron"} <= names
        preload = conn.execute("show shared_preload_libraries").fetchone()
        assert preload is not None and "pg_cron" in preload[0]
        cron_db = conn.execute("show cron.database_name").fetchone()
        assert cron_db == (config.database,)

    assert server.start(config) is False  # already running: harmless

    assert current.pid is not None
    os.kill(current.pid, signal.SIGKILL)
    crashed = wait_until_stopped(config)
    assert crashed.stale_pid_file

    assert server.start(config) is True
    assert server.ensure_running(config) == server.dsn(config)
    with psycopg.connect(server.dsn(config)) as conn:
        assert conn.execute("select 1").fetchone() == (1,)

    assert server.stop(config) is True
    assert not server.status(config).running
    assert server.stop(config) is False  # already stopped: harmless


def test_start_survives_a_recycled_pid(open_config: Config) -> None:
    config = open_config
    server.start(config)
    server.stop(config)
    # After a reboot the pid in a leftover postmaster.pid can belong to any
    # live process; PostgreSQL alone would refuse to start.
    cluster = server.locate(config)
    assert cluster.root == config.home
    (cluster.data_dir / "postmaster.pid").write_text(f"{os.getpid()}\n{cluster.data_dir}\n")
    assert server.status(config).stale_pid_file
    assert server.start(config) is True
    assert server.status(config).running


def test_port_in_use_is_a_clear_error(closed_config: Config) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", closed_config.port))
        squatter.listen()
        with pytest.raises(server.ServerError, match=r"port \d+ .* already in use"):
            server.start(closed_config)


def test_missing_postgres_says_make_setup(tmp_path: Path) -> None:
    with pytest.raises(server.ServerError, match="make setup"):
        server.find_binaries(root=tmp_path)
    # A server without pgvector and pg_cron does not count.
    bindir = tmp_path / "16" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "postgres").write_text("#!/bin/sh\n")
    (bindir / "postgres").chmod(0o755)
    with pytest.raises(server.ServerError, match="make setup"):
        server.find_binaries(root=tmp_path)


def test_installed_postgres_is_found() -> None:
    binaries = server.find_binaries()
    assert (binaries.bindir / "postgres").exists()
    assert binaries.bindir == server.PG_ROOT / str(binaries.major) / "bin"


@pytest.mark.skipif(not IS_ROOT, reason="only root hands the cluster to the postgres OS user")
def test_cluster_location_follows_reachability(tmp_path: Path) -> None:
    home = open_home()
    try:
        reachable = Config(home=home / "a" / "b", port=54000, database="pgmem", dsn=None)
        assert server.locate(reachable).root == reachable.home
    finally:
        shutil.rmtree(home)
    closed = Config(home=tmp_path / "home", port=54000, database="pgmem", dsn=None)
    cluster = server.locate(closed)
    assert cluster.root.parent == server.FALLBACK_ROOT
    assert server.locate(closed) == cluster  # derived, so every command agrees


def test_dsn_is_a_libpq_url(tmp_path: Path) -> None:
    config = Config(home=tmp_path / "with space", port=54000, database="mem db", dsn=None)
    parts = conninfo_to_dict(server.dsn(config, user="tenant_a"))
    assert parts["host"] == str(server.locate(config).socket_dir)
    assert parts["port"] == "54000"
    assert parts["dbname"] == "mem db"
    assert parts["user"] == "tenant_a"
    assert conninfo_to_dict(server.dsn(config))["user"] == "postgres"


def test_external_server_is_not_managed(tmp_path: Path) -> None:
    external = "postgresql://app:secret@127.0.0.1:1/mem"
    config = Config(home=tmp_path, port=54000, database="pgmem", dsn=external)
    assert server.dsn(config) == external
    assert server.ensure_running(config) == external
    assert conninfo_to_dict(server.dsn(config, database="other"))["dbname"] == "other"
    for action in (server.start, server.stop, server.status):
        with pytest.raises(server.ServerError, match="external server"):
            action(config)
    assert server.redact(external) == "postgresql://app:***@127.0.0.1:1/mem"
    assert server.redact("host=x password='a b' user=y") == "host=x password=*** user=y"


def test_cli_with_external_dsn(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"PGMEM_HOME": str(tmp_path), "PGMEM_DSN": "postgresql://app:secret@127.0.0.1:1/mem"}
    result = runner.invoke(app, ["db", "url"], env=env)
    assert result.exit_code == 0
    assert result.stdout.strip() == "postgresql://app:secret@127.0.0.1:1/mem"
    for command in ("start", "stop", "status"):
        result = runner.invoke(app, ["db", command], env=env)
        assert result.exit_code == 1
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1
        assert "secret" not in result.stderr
    assert "does not manage it" in runner.invoke(app, ["db", "start"], env=env).stderr
    # --dsn beats the environment.
    result = runner.invoke(app, ["db", "url", "--dsn", "postgresql://other@/x"], env=env)
    assert result.stdout.strip() == "postgresql://other@/x"


def test_cli_round_trip(open_config: Config) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PGMEM_")}
    env.update(PGMEM_HOME=str(open_config.home), PGMEM_PORT=str(open_config.port))

    def pgmem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PGMEM), "db", *args], env=env, capture_output=True, text=True, timeout=120
        )

    stopped = pgmem("status")
    assert stopped.returncode == 3 and "no cluster yet" in stopped.stdout

    started = pgmem("start")
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("started: postgresql://postgres@/pgmem?host=")
    assert pgmem("start").stdout.startswith("already running")

    running = pgmem("status")
    assert running.returncode == 0 and running.stdout.startswith("running (pid ")

    url = pgmem("url").stdout.strip()
    assert url == server.dsn(open_config)

    query = pgmem("psql", "-X", "-Atc", "select extname from pg_extension order by 1")
    assert query.returncode == 0, query.stderr
    assert "plpgsql" in query.stdout

    assert pgmem("stop").stdout.strip() == "stopped"
    assert pgmem("stop").stdout.strip() == "not running"
    final = pgmem("status")
    assert final.returncode == 3 and final.stdout.startswith("stopped: ")
