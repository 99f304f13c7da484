"""The embedded local PostgreSQL server: one cluster per PGMEM_HOME.

`pgmem db start` has to work on a fresh Debian machine where everything runs
as root, so this module finds a PostgreSQL build that has pgvector and
pg_cron, creates the cluster the first time, and runs it as an unprivileged
OS user. It holds no CLI code: cli/db.py turns a ServerError into one line
on stderr.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from pgmem.config import Config
from pgmem.queries import schema as server_queries

SUPERUSER = "postgres"
# The Debian layout that scripts/install-postgres.sh installs into.
PG_ROOT = Path("/usr/lib/postgresql")
# Where a root-run cluster goes when the postgres OS user cannot reach
# PGMEM_HOME (a clone under /root, mode 700).
FALLBACK_ROOT = Path("/var/lib/pgmem")
REQUIRED_LIBRARIES = ("vector.so", "pg_cron.so")
# A file in PGMEM_HOME that makes its cluster a Citus node (pgmem.citus writes
# it): every start then preloads citus too, whichever command starts it.
CITUS_MARKER = "citus-node"
# sun_path is 108 bytes on Linux, one of them the terminating NUL.
MAX_SOCKET_PATH = 107
# Crash recovery after a kill -9 replays WAL before the server accepts
# connections, so starting gets more time than pg_ctl's 60 s default.
START_TIMEOUT = 120
STOP_TIMEOUT = 60
# Backends of a killed postmaster notice its death within a second or so;
# a new postmaster refuses to start while they still hold shared memory.
ORPHAN_WAIT = 15.0
SETUP_HINT = "run `make setup` to install PostgreSQL with pgvector and pg_cron"
EXTERNAL_MESSAGE = "an external server is configured (PGMEM_DSN or --dsn); pgmem does not manage it"


class ServerError(Exception):
    """An expected failure, with a message fit for one line on stderr."""


@dataclass(frozen=True)
class Binaries:
    """A PostgreSQL installation that can load pgvector and pg_cron."""

    bindir: Path
    major: int

    def tool(self, name: str) -> Path:
        return self.bindir / name


@dataclass(frozen=True)
class Cluster:
    """Where one PGMEM_HOME's cluster lives on disk."""

    root: Path  # holds pgdata/, log/ and the lock file
    data_dir: Path
    socket_dir: Path
    log_file: Path
    # Why the cluster (or its socket) lives outside PGMEM_HOME; None when it does not.
    relocated: str | None

    @property
    def lock_file(self) -> Path:
        return self.root / "server.lock"


@dataclass(frozen=True)
class Status:
    cluster: Cluster
    initialized: bool
    pid: int | None  # the postmaster's pid while it runs
    stale_pid_file: bool  # a postmaster.pid whose server is gone (crash, kill -9)

    @property
    def running(self) -> bool:
        return self.pid is not None


def find_binaries(major: int | None = None, root: Path = PG_ROOT) -> Binaries:
    """The newest PostgreSQL under `root` whose lib dir has pgvector and pg_cron.

    `major` pins the version, for a cluster that an older major created.
    """
    majors = sorted(
        (int(entry.name) for entry in _listdir(root) if entry.name.isdigit()), reverse=True
    )
    for candidate in majors:
        if major is not None and candidate != major:
            continue
        bindir = root / str(candidate) / "bin"
        if not os.access(bindir / "postgres", os.X_OK):
            continue
        libdir = _pkglibdir(bindir)
        if all((libdir / library).is_file() for library in REQUIRED_LIBRARIES):
            return Binaries(bindir=bindir, major=candidate)
    if major is not None:
        raise ServerError(
            f"the cluster was created by PostgreSQL {major}, which is not installed with "
            f"pgvector and pg_cron under {root}; {SETUP_HINT}"
        )
    raise ServerError(f"no PostgreSQL with pgvector and pg_cron under {root}; {SETUP_HINT}")


def locate(config: Config) -> Cluster:
    """The cluster folders for config.home; the same answer every time it is asked.

    Nothing is recorded: an existing cluster is found where it is, and a new
    one goes where the rules below put it, which depend only on the resolved
    PGMEM_HOME, the port and the file system.
    """
    home = config.home
    fallback = _fallback_root(home)
    relocated: str | None = None
    if _is_cluster(home / "pgdata"):
        root = home
    elif _is_cluster(fallback / "pgdata"):
        root = fallback
        relocated = (
            f"the cluster for {home} lives in {root} "
            f"(the {SUPERUSER} OS user could not reach {home} when it was created)"
        )
    elif os.geteuid() == 0 and not _reachable_by_postgres(home):
        root = fallback
        relocated = f"the {SUPERUSER} OS user cannot reach {home}, so the cluster lives in {root}"
    else:
        root = home
    socket_dir = root / "socket"
    if len(str(socket_dir / f".s.PGSQL.{config.port}")) > MAX_SOCKET_PATH:
        # A deep clone path overflows sun_path; the socket alone moves.
        if os.geteuid() == 0:
            socket_dir = fallback / "socket"
        else:
            socket_dir = Path("/tmp") / f"pgmem-{os.geteuid()}-{fallback.name}"
        note = f"the socket path under {root} is too long, so the socket lives in {socket_dir}"
        relocated = f"{relocated}; {note}" if relocated else note
    return Cluster(
        root=root,
        data_dir=root / "pgdata",
        socket_dir=socket_dir,
        log_file=root / "log" / "postgresql.log",
        relocated=relocated,
    )


def dsn(config: Config, database: str | None = None, user: str = SUPERUSER) -> str:
    """A libpq URL for the server: the local one over its unix socket, or PGMEM_DSN.

    For an external server the configured DSN is returned as is, except that
    `database`, and `user` when it is not the default superuser, replace what
    it names.
    """
    if config.dsn:
        overrides = {"dbname": database} if database else {}
        if user != SUPERUSER:
            overrides["user"] = user
        return make_conninfo(config.dsn, **overrides) if overrides else config.dsn
    cluster = locate(config)
    return (
        f"postgresql://{quote(user, safe='')}@/{quote(database or config.database, safe='')}"
        f"?host={quote(str(cluster.socket_dir), safe='/')}&port={config.port}"
    )


def status(config: Config) -> Status:
    """Whether the local cluster exists and runs. Refuses an external server."""
    _refuse_external(config)
    cluster = locate(config)
    if not _is_cluster(cluster.data_dir):
        return Status(cluster=cluster, initialized=False, pid=None, stale_pid_file=False)
    pid = _read_lock_pid(cluster.data_dir / "postmaster.pid")
    if pid is not None and _is_cluster_process(pid, cluster.data_dir):
        return Status(cluster=cluster, initialized=True, pid=pid, stale_pid_file=False)
    return Status(cluster=cluster, initialized=True, pid=None, stale_pid_file=pid is not None)


def start(config: Config) -> bool:
    """Create the cluster if needed and start it. False when it was already running.

    Either way the server runs afterwards and config.database exists.
    """
    _refuse_external(config)
    _make_dirs(config.home)
    cluster = locate(config)
    _make_dirs(cluster.root)
    with _locked(cluster):
        current = status(config)
        if current.running:
            _ensure_database(config)
            return False
        binaries = find_binaries(_cluster_major(cluster))
        user = _server_user(cluster)
        if current.stale_pid_file:
            _clear_crash_leftovers(cluster, config.port)
        _check_port_free(config.port)
        _prepare_folders(cluster, user)
        if not current.initialized:
            _initdb(binaries, cluster, user)
        _write_settings(cluster, config, user)
        _pg_ctl_start(binaries, cluster, user)
        _ensure_database(config)
        return True


def stop(config: Config) -> bool:
    """Stop the server with a fast shutdown. False when it was not running."""
    _refuse_external(config)
    cluster = locate(config)
    if not _is_cluster(cluster.data_dir):
        return False
    with _locked(cluster):
        if not status(config).running:
            return False
        binaries = find_binaries(_cluster_major(cluster))
        result = _run(
            [
                str(binaries.tool("pg_ctl")),
                "stop",
                "-D",
                str(cluster.data_dir),
                "-m",
                "fast",
                "-w",
                "-t",
                str(STOP_TIMEOUT),
                "-s",
            ],
            _server_user(cluster),
            timeout=STOP_TIMEOUT + 10,
        )
        if result.returncode != 0:
            raise ServerError(f"pg_ctl stop failed: {_last_line(result.stderr)}")
        return True


def ensure_running(config: Config) -> str:
    """Start the local server unless it runs (or an external one is set); its DSN."""
    if config.dsn:
        return config.dsn
    start(config)
    return dsn(config)


def external_version(config: Config) -> str:
    """The version of the external server at PGMEM_DSN, proving it answers."""
    if not config.dsn:
        raise ServerError("no external server is configured (PGMEM_DSN or --dsn)")
    try:
        with psycopg.connect(config.dsn, connect_timeout=10) as conn:
            row = conn.execute("show server_version").fetchone()
    except psycopg.Error as exc:
        raise ServerError(
            f"cannot reach the external server {redact(config.dsn)}: {_first_line(str(exc))}"
        ) from None
    return str(row[0]) if row else "unknown"


def psql_argv(config: Config, args: Sequence[str] = ()) -> list[str]:
    """The psql command line for the server; extra args go after the connection."""
    if config.dsn:
        try:
            psql = str(find_binaries().tool("psql"))
        except ServerError:
            # An external server needs only a client, from wherever it is installed.
            found = shutil.which("psql")
            if found is None:
                raise ServerError(f"psql is not installed; {SETUP_HINT}") from None
            psql = found
    else:
        psql = str(find_binaries(_cluster_major(locate(config))).tool("psql"))
    return [psql, f"--dbname={dsn(config)}", *args]


def redact(conninfo: str) -> str:
    """A DSN safe to print: passwords replaced by ***."""
    conninfo = re.sub(r"(://[^:/@?]*:)[^@/?]*@", r"\1***@", conninfo)
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", r"\1***", conninfo)


# -- locating ---------------------------------------------------------------


def _listdir(path: Path) -> list[Path]:
    try:
        return list(path.iterdir())
    except OSError:
        return []


def _pkglibdir(bindir: Path) -> Path:
    pg_config = bindir / "pg_config"
    if os.access(pg_config, os.X_OK):
        result = subprocess.run(
            [str(pg_config), "--pkglibdir"], capture_output=True, text=True, check=False
        )
        if result.returncode == 0 and result.stdout.strip():
            return Path(result.stdout.strip())
    # pg_config ships with the dev package on some systems; Debian's layout otherwise.
    return bindir.parent / "lib"


def _fallback_root(home: Path) -> Path:
    return FALLBACK_ROOT / hashlib.sha256(str(home).encode()).hexdigest()[:12]


def _is_cluster(data_dir: Path) -> bool:
    # os.path swallows EACCES, which pathlib re-raises on Python 3.11.
    if os.path.isfile(data_dir / "PG_VERSION"):
        return True
    # A cluster of another OS user: it exists, but this user cannot look inside.
    return os.path.isdir(data_dir) and not os.access(data_dir, os.X_OK)


def _cluster_major(cluster: Cluster) -> int | None:
    try:
        text = (cluster.data_dir / "PG_VERSION").read_text().strip()
    except FileNotFoundError:
        return None
    except PermissionError:
        raise ServerError(_not_yours(cluster)) from None
    return int(text.split(".")[0])


def _reachable_by_postgres(home: Path) -> bool:
    """Whether the postgres OS user can traverse into home (or where it will be made)."""
    try:
        user = pwd.getpwnam(SUPERUSER)
    except KeyError:
        return False
    existing = home
    while not os.path.exists(existing) and existing != existing.parent:
        existing = existing.parent
    # _make_dirs creates the missing rest with mode 755, so the nearest
    # existing folder decides. Asking the kernel as that user sees ACLs too.
    result = _run(["test", "-x", str(existing)], user, timeout=10)
    return result.returncode == 0


# -- processes and lock files -------------------------------------------------


def _read_lock_pid(path: Path) -> int | None:
    try:
        first = path.read_text().split("\n", 1)[0].strip()
    except FileNotFoundError:
        return None
    except PermissionError:
        raise ServerError(f"cannot read {path}: run pgmem as root or as its owner") from None
    # A lock file caught mid-write reads as no lock at all.
    return int(first) if first.lstrip("-").isdigit() else None


def _is_cluster_process(pid: int, data_dir: Path) -> bool:
    """Whether pid is a live process of this cluster.

    Every server process runs with the data directory as its working
    directory, which tells a live postmaster from a recycled pid or a zombie
    that a crash left behind (both of which pass kill(pid, 0)).
    """
    matches = _runs_in(pid, data_dir)
    if matches is not None:
        return matches
    # Unreadable. Without root the server runs as this very user, so a process
    # hidden from it is someone else's; root trusts the lock file, as
    # PostgreSQL does.
    return os.geteuid() == 0 and _alive(pid)


def _runs_in(pid: int, data_dir: Path) -> bool | None:
    """Whether pid's working directory is data_dir; None when that cannot be read."""
    try:
        cwd = os.readlink(f"/proc/{abs(pid)}/cwd")
    except (FileNotFoundError, ProcessLookupError):
        return False
    except PermissionError:
        return None
    return cwd == os.path.realpath(data_dir)


def _alive(pid: int) -> bool:
    try:
        os.kill(abs(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _cluster_processes(data_dir: Path) -> list[int]:
    # Only processes proven to run in data_dir: even root cannot read some
    # (PID 1 of a VM), and guessing would wait on them forever.
    return [
        int(entry.name)
        for entry in _listdir(Path("/proc"))
        if entry.name.isdigit() and _runs_in(int(entry.name), data_dir)
    ]


def _clear_crash_leftovers(cluster: Cluster, port: int) -> None:
    """Make a crashed cluster startable again without risking a live one."""
    deadline = time.monotonic() + ORPHAN_WAIT
    while orphans := _cluster_processes(cluster.data_dir):
        if time.monotonic() > deadline:
            pids = " ".join(str(pid) for pid in orphans)
            raise ServerError(
                f"processes of the crashed server are still running (pids {pids}); "
                "end them and start again"
            )
        time.sleep(0.2)
    # PostgreSQL clears a lock file whose pid is dead on its own, and checks
    # its shared memory then; a pid since reused by another process (or a
    # zombie) makes it refuse, so only those files go.
    for lock in (
        cluster.data_dir / "postmaster.pid",
        cluster.socket_dir / f".s.PGSQL.{port}.lock",
    ):
        pid = _read_lock_pid(lock)
        if pid is not None and _alive(pid):
            lock.unlink(missing_ok=True)


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # PostgreSQL binds with SO_REUSEADDR too, so TIME_WAIT leftovers of a
        # server that just stopped do not count as in use.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ServerError(
                    f"port {port} on 127.0.0.1 is already in use by another program; "
                    "set PGMEM_PORT to a free port"
                ) from None
            raise ServerError(f"cannot use port {port} on 127.0.0.1: {exc.strerror}") from None


@contextmanager
def _locked(cluster: Cluster) -> Iterator[None]:
    # Two starts at once (parallel tests, make demo) would both run initdb.
    with open(cluster.lock_file, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- running PostgreSQL tools -----------------------------------------------


def _server_user(cluster: Cluster) -> pwd.struct_passwd | None:
    """The OS user the server runs as; None for this process's own user.

    PostgreSQL refuses to run as root, so root hands the cluster to its
    owner, or to the postgres OS user for a new one.
    """
    try:
        owner: int | None = os.stat(cluster.data_dir).st_uid
    except FileNotFoundError:
        owner = None
    me = os.geteuid()
    if owner is not None and owner not in (0, me):
        if me != 0:
            raise ServerError(_not_yours(cluster))
        return pwd.getpwuid(owner)
    if me != 0:
        return None
    try:
        return pwd.getpwnam(SUPERUSER)
    except KeyError:
        raise ServerError(
            f"PostgreSQL refuses to run as root and there is no {SUPERUSER} OS user; {SETUP_HINT}"
        ) from None


def _not_yours(cluster: Cluster) -> str:
    try:
        owner = pwd.getpwuid(os.stat(cluster.data_dir).st_uid).pw_name
    except (OSError, KeyError):
        owner = "another user"
    return (
        f"the cluster in {cluster.data_dir} belongs to OS user {owner}; "
        f"run pgmem as {owner} or root"
    )


def _run(
    argv: list[str], user: pwd.struct_passwd | None, *, timeout: float
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    if user is not None:
        env.update(HOME=user.pw_dir, USER=user.pw_name, LOGNAME=user.pw_name)
    try:
        # Dropping privileges in the child (rather than `runuser`) needs no PAM
        # session, which minimal containers lack. cwd "/" because the caller's
        # folder may be closed to that user.
        return subprocess.run(
            argv,
            cwd="/",
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            user=user.pw_uid if user else None,
            group=user.pw_gid if user else None,
            extra_groups=os.getgrouplist(user.pw_name, user.pw_gid) if user else None,
        )
    except subprocess.TimeoutExpired:
        raise ServerError(f"{Path(argv[0]).name} did not finish within {timeout:.0f} s") from None
    except OSError as exc:
        raise ServerError(f"cannot run {argv[0]}: {exc.strerror}") from None


def _make_dirs(path: Path) -> None:
    """mkdir -p, with mode 755 for the folders it creates whatever the umask."""
    missing = []
    while not os.path.exists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(exist_ok=True)
            folder.chmod(0o755)
        except OSError as exc:
            raise ServerError(f"cannot create {folder}: {exc.strerror}") from None


def _prepare_folders(cluster: Cluster, user: pwd.struct_passwd | None) -> None:
    # 700: the socket folder is the access control for `local ... trust`.
    for folder, mode in (
        (cluster.data_dir, 0o700),
        (cluster.socket_dir, 0o700),
        (cluster.log_file.parent, 0o750),
    ):
        _make_dirs(folder.parent)
        try:
            folder.mkdir(mode=mode, exist_ok=True)
            folder.chmod(mode)
            if user is not None:
                os.chown(folder, user.pw_uid, user.pw_gid)
        except OSError as exc:
            raise ServerError(f"cannot prepare {folder}: {exc.strerror}") from None


def _initdb_locale() -> str:
    try:
        listed = subprocess.run(["locale", "-a"], capture_output=True, text=True, check=False)
    except OSError:
        return "C"
    names = {line.strip().lower().replace("-", "") for line in listed.stdout.splitlines()}
    return "C.UTF-8" if "c.utf8" in names else "C"


def _initdb(binaries: Binaries, cluster: Cluster, user: pwd.struct_passwd | None) -> None:
    if any(cluster.data_dir.iterdir()):
        # Never delete what might be someone's data.
        raise ServerError(
            f"{cluster.data_dir} exists but holds no PostgreSQL cluster "
            "(an interrupted initdb?); remove it and start again"
        )
    result = _run(
        [
            str(binaries.tool("initdb")),
            "-D",
            str(cluster.data_dir),
            "-U",
            SUPERUSER,
            "-E",
            "UTF8",
            f"--locale={_initdb_locale()}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ],
        user,
        timeout=300,
    )
    if result.returncode != 0:
        raise ServerError(f"initdb failed: {_last_line(result.stderr or result.stdout)}")


def _conf_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _write_settings(cluster: Cluster, config: Config, user: pwd.struct_passwd | None) -> None:
    """(Re)write pgmem.conf and pg_hba.conf, so a changed port or home applies on start."""
    citus = (config.home / CITUS_MARKER).is_file()
    settings = {
        "listen_addresses": _conf_string("127.0.0.1"),
        "port": str(config.port),
        "unix_socket_directories": _conf_string(str(cluster.socket_dir)),
        "shared_preload_libraries": _conf_string("citus,pg_cron" if citus else "pg_cron"),
        "cron.database_name": _conf_string(config.database),
        # Jobs run in background workers, so pg_cron needs no password or
        # socket connection; each running job takes one worker slot.
        "cron.use_background_workers": "on",
        "max_worker_processes": "20",
        # Sized for a small machine; 512MB lets an HNSW build stay in memory.
        "shared_buffers": _conf_string("256MB"),
        "maintenance_work_mem": _conf_string("512MB"),
        "work_mem": _conf_string("16MB"),
        # The change stream's publication (pgmem_changes) can be consumed by
        # logical replication.
        "wal_level": "logical",
    }
    if citus:
        settings.update(
            {
                # SET LOCAL pgmem.tenant (pgmem.set_tenant) reaches the workers' sessions.
                "citus.propagate_set_commands": _conf_string("local"),
                # pgmem's statement triggers only read the tenant binding (docs/scaling.md).
                "citus.enable_unsafe_triggers": "on",
                # Row-level security on a shard reads the login binding from the
                # reference table _tenant_logins, whose placement is local on every node.
                "citus.allow_nested_distributed_execution": "on",
                # Connections a node opens to itself (shard splits and moves) go
                # over its socket, like the other node-to-node connections.
                "citus.local_hostname": _conf_string(str(cluster.socket_dir)),
                "max_connections": "200",
            }
        )
    conf = [
        "# Written by `pgmem db start` on every start; ALTER SYSTEM settings still win.",
        *(f"{name} = {value}" for name, value in settings.items()),
    ]
    hba = [
        "# Written by `pgmem db start` on every start.",
        "# The socket folder is mode 700, so only the server's OS user and root reach it.",
        "local   all          all                  trust",
        "local   replication  all                  trust",
        "# Tenant login roles connect over TCP with passwords.",
        "host    all          all   127.0.0.1/32   scram-sha-256",
        "host    replication  all   127.0.0.1/32   scram-sha-256",
    ]
    main_conf = cluster.data_dir / "postgresql.conf"
    include = "include 'pgmem.conf'"
    try:
        _write_owned(cluster.data_dir / "pgmem.conf", "\n".join(conf) + "\n", user)
        _write_owned(cluster.data_dir / "pg_hba.conf", "\n".join(hba) + "\n", user)
        text = main_conf.read_text()
        if include not in text.splitlines():
            # Last, so it overrides what initdb wrote above it.
            with main_conf.open("a") as handle:
                handle.write(f"\n{include}\n")
    except OSError as exc:
        raise ServerError(f"cannot write the settings in {cluster.data_dir}: {exc}") from None


def _write_owned(path: Path, text: str, user: pwd.struct_passwd | None) -> None:
    path.write_text(text)
    path.chmod(0o600)
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)


def _pg_ctl_start(binaries: Binaries, cluster: Cluster, user: pwd.struct_passwd | None) -> None:
    log_offset = _size(cluster.log_file)
    result = _run(
        [
            str(binaries.tool("pg_ctl")),
            "start",
            "-D",
            str(cluster.data_dir),
            # pg_ctl's log, not logging_collector: it also catches what the
            # server says before its logger starts (a port already in use).
            "-l",
            str(cluster.log_file),
            "-w",
            "-t",
            str(START_TIMEOUT),
            "-s",
        ],
        user,
        timeout=START_TIMEOUT + 10,
    )
    if result.returncode == 0:
        return
    reason = _log_failure(cluster.log_file, log_offset) or _last_line(result.stderr)
    if "already in use" in reason:
        reason += "; set PGMEM_PORT to a free port"
    raise ServerError(f"PostgreSQL did not start: {reason} (log: {cluster.log_file})")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _log_failure(log_file: Path, offset: int) -> str:
    """The first FATAL/PANIC/ERROR line this start wrote to the log."""
    try:
        with log_file.open(errors="replace") as handle:
            handle.seek(offset)
            lines = handle.read().splitlines()
    except OSError:
        return ""
    for line in lines:
        for level in ("FATAL:", "PANIC:", "ERROR:"):
            if level in line:
                return line.split(level, 1)[1].strip()
    return ""


def _first_line(text: str) -> str:
    # libpq puts the cause first and hints after it.
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no details"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _ensure_database(config: Config) -> None:
    try:
        with psycopg.connect(dsn(config, "postgres"), autocommit=True, connect_timeout=10) as conn:
            exists = conn.execute(
                server_queries.DATABASE_EXISTS, {"name": config.database}
            ).fetchone()
            if exists is None:
                # Another session may create it between the check and here.
                with suppress(errors.DuplicateDatabase):
                    conn.execute(
                        server_queries.CREATE_DATABASE.format(name=sql.Identifier(config.database))
                    )
    except psycopg.Error as exc:
        raise ServerError(
            f"cannot create database {config.database}: {_first_line(str(exc))}"
        ) from None


def _refuse_external(config: Config) -> None:
    if config.dsn:
        raise ServerError(f"{EXTERNAL_MESSAGE}: {redact(config.dsn)}")
