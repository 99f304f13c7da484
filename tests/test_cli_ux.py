"""What a newcomer meets at the `pgmem` prompt, run as subprocesses: verbs that start
without loading models or migrations, errors that name the flag or the command that
fixes them, tables that fit, plain text when piped, and `pgmem doctor`."""

from __future__ import annotations

import inspect
import json
import os
import pty
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import typer
from psycopg.conninfo import make_conninfo

from pgmem.cli.app import VERBS, load_verb

ROOT = Path(__file__).resolve().parents[1]
PGMEM = Path(sys.executable).parent / "pgmem"
ANSI = re.compile(r"\x1b\[")
# A colour (foreground 30-38, 90-97) among an escape's parameters; NO_COLOR keeps bold.
COLOUR = re.compile(r"\x1b\[(?:[0-9]+;)*(?:3[0-8]|9[0-7])(?:;[0-9]+)*m")

Run = Callable[..., subprocess.CompletedProcess[str]]


def _env(**extra: str) -> dict[str, str]:
    # Nothing from the caller's environment decides where, for whom or with what model.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PGMEM_", "OPENAI_")) or k in ("PGMEM_HOME", "PGMEM_PORT")
    }
    env.pop("NO_COLOR", None)
    env["COLUMNS"] = "80"
    env.update(extra)
    return env


@pytest.fixture
def pgmem(dsn: str, admin: psycopg.Connection) -> Run:
    """Runs `pgmem <args> --dsn <test database>` at 80 columns; tenant acme exists."""
    admin.execute("select pgmem.create_tenant('acme')")

    def run(*args: str, target: str = dsn, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PGMEM), *args, "--dsn", target],
            capture_output=True,
            text=True,
            env=_env(**env),
            timeout=300,
            check=False,
        )

    return run


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], code: int, *texts: str) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    for text in texts:
        assert text in result.stderr
    return result.stderr


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -------------------------------------------------------------------- start-up


def test_help_lists_every_verb_by_the_first_line_of_its_docstring() -> None:
    """The listing is read from app.VERBS without importing the verbs; it must say
    what each verb's own help says first, and no docstring may start mid-sentence."""
    for name, verb in VERBS.items():
        command = load_verb(name)
        own = " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())
        assert own.startswith(verb.summary.rstrip(".")), (name, own)
        assert len(verb.summary) <= 70, name
    listing = subprocess.run(
        [str(PGMEM), "--help"], capture_output=True, text=True, env=_env(), check=True
    ).stdout
    for name, verb in VERBS.items():
        assert re.search(rf"{name}\s+{re.escape(verb.summary)}", listing), name


def test_the_start_up_report_shows_read_verbs_load_no_heavy_library(dsn: str) -> None:
    """scripts/bench_cli.py times each first command (numbers, no verdict) and names the
    heavy libraries it loaded: read verbs and `add --raw/--enqueue` load none."""
    report = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_cli.py"), "--runs", "1", "--dsn", dsn],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
        check=False,
    )
    assert report.returncode == 0, report.stderr
    rows = [line for line in report.stdout.splitlines() if line.startswith("| `pgmem")]
    commands = [row.split("`")[1].split()[1] for row in rows]
    assert commands == [
        "--help",
        "list",
        "show",
        "history",
        "stats",
        "search",
        "jobs",
        "tenant",
        "add",
        "add",
    ]
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        float(cells[1]), float(cells[2])  # seconds, as numbers
        assert cells[3] == "none", row


# ---------------------------------------------------------------------- errors


def test_errors_name_the_flag_the_verb_or_the_command_to_run(pgmem: Run) -> None:
    one_line_error(pgmem("list"), 1, "-t/--tenant", "PGMEM_TENANT")
    one_line_error(
        pgmem("search", "tea", "-u", "bob", "--no-embed"), 1, "-t/--tenant", "PGMEM_TENANT"
    )
    one_line_error(pgmem("list", "-t", "nope"), 1, "unknown pgmem tenant", "pgmem tenant list")
    stopped = f"postgresql://postgres@127.0.0.1:{_closed_port()}/pgmem"
    for args in (["list", "-t", "acme"], ["tenant", "list"], ["jobs"]):
        one_line_error(pgmem(*args, target=stopped), 3, "pgmem db start")
    # Usage errors are one line too, and say where the help is.
    one_line_error(pgmem("search", "tea", "-t", "acme"), 2, "--user", "pgmem search --help")
    one_line_error(pgmem("lst"), 2, "Did you mean 'list'?")
    one_line_error(pgmem("list", "-t", "acme", "--json", "--jsonl"), 2, "--jsonl")


# ---------------------------------------------------------------------- output


def test_tables_give_the_width_to_content_and_show_prints_it_whole(pgmem: Run) -> None:
    long = (
        "Bob keeps a long list of preferences about his editor, his fonts, his keyboard "
        "layout and the colour of every terminal he has ever used at work or at home"
    )
    memory_id = json.loads(
        ok(pgmem("add", long, "--raw", "--no-embed", "-u", "bob", "-t", "acme", "--json"))
    )[0]["memory_id"]
    listing = ok(pgmem("list", "-t", "acme"))
    lines = listing.splitlines()
    assert all(len(line) <= 80 for line in lines), listing
    row = next(line for line in lines if line.lstrip().startswith(str(memory_id)))
    assert "0.500" in row  # numbers whole, on the row itself
    assert row.rstrip().endswith("…") and "Bob keeps a long list" in row
    # The content column has what the others leave (it had 10 characters, wrapped).
    assert len("Bob keeps" + row.split("Bob keeps", 1)[1].rstrip()) >= 30, listing
    shown = " ".join(ok(pgmem("show", str(memory_id), "-t", "acme")).split())
    assert long in shown
    wide = ok(pgmem("list", "-t", "acme", COLUMNS="300"))
    assert long in wide


def test_empty_results_are_sentences(pgmem: Run) -> None:
    assert ok(pgmem("list", "-t", "acme")).startswith("no active memories")
    assert ok(pgmem("search", "zebra", "-u", "bob", "-t", "acme", "--no-embed")).startswith(
        "no memories of bob match 'zebra'"
    )
    assert ok(pgmem("stats", "-t", "acme")).startswith("no memories yet")
    assert json.loads(ok(pgmem("list", "-t", "acme", "--json"))) == []
    assert ok(pgmem("list", "-t", "acme", "--jsonl")) == ""


def test_jsonl_is_one_object_per_line(pgmem: Run) -> None:
    for text in ("Likes green tea", "Plays chess"):
        ok(pgmem("add", text, "--raw", "--no-embed", "-u", "bob", "-t", "acme"))
    lines = ok(pgmem("list", "-t", "acme", "--jsonl")).splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["Plays chess", "Likes green tea"]
    shown = ok(pgmem("show", str(json.loads(lines[0])["memory_id"]), "-t", "acme", "--jsonl"))
    assert shown.count("\n") == 1 and json.loads(shown)["content"] == "Plays chess"
    tea = str(json.loads(lines[1])["memory_id"])
    for args in (["history", tea], ["stats"], ["search", "tea", "-u", "bob", "--no-embed"]):
        out = ok(pgmem(*args, "-t", "acme", "--jsonl"))
        assert all(json.loads(line) is not None for line in out.splitlines()), args
    tenants = ok(pgmem("tenant", "list", "--jsonl")).splitlines()
    assert [json.loads(line)["tenant_id"] for line in tenants] == ["acme"]
    assert set(json.loads(ok(pgmem("jobs", "--jsonl")))) == {"scheduled", "runs"}


def test_piped_output_is_plain_text(pgmem: Run) -> None:
    added = ok(
        pgmem("add", "Likes tea", "--raw", "--no-embed", "-u", "bob", "-t", "acme", "--json")
    )
    tea = str(json.loads(added)[0]["memory_id"])
    for args in (
        ["list", "-t", "acme"],
        ["show", tea, "-t", "acme"],
        ["stats", "-t", "acme"],
        ["search", "tea", "-u", "bob", "-t", "acme", "--no-embed"],
        ["tenant", "list"],
        ["jobs"],
        ["doctor", "--no-embed"],
        ["list"],  # an error
    ):
        result = pgmem(*args)
        assert not ANSI.search(result.stdout + result.stderr), args
    # worker --once draws no bars when piped: its log lines and JSON summary only.
    endpoint = f"http://127.0.0.1:{_closed_port()}/v1"
    drained = pgmem(
        "worker",
        "--once",
        "-t",
        "acme",
        PGMEM_EMBEDDER="openai",
        OPENAI_BASE_URL=endpoint,
        PGMEM_EMBED_MODEL="all-MiniLM-L6-v2",
        PGMEM_EMBED_DIMS="384",
    )
    assert json.loads(ok(drained))["jobs"] == 0
    assert not ANSI.search(drained.stdout + drained.stderr)
    assert "━" not in drained.stderr


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """What `pgmem args` writes to a pseudo-terminal."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [str(PGMEM), *args], stdin=terminal, stdout=terminal, stderr=terminal, env=env
        )
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=120)
    finally:
        os.close(controller)
    return b"".join(chunks).decode(errors="replace")


def test_colour_on_a_terminal_unless_no_color(dsn: str) -> None:
    args = ["doctor", "--no-embed", "--dsn", dsn]
    assert COLOUR.search(_on_a_terminal(args, _env()))
    assert not COLOUR.search(_on_a_terminal(args, _env(NO_COLOR="1")))


# ---------------------------------------------------------------------- doctor


def _doctor(target: str, *extra: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    table = subprocess.run(
        [str(PGMEM), "doctor", *extra, "--dsn", target],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        check=False,
    )
    checks = subprocess.run(
        [str(PGMEM), "doctor", "--no-embed", "--jsonl", "--dsn", target],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        check=False,
    )
    by_area = {c["area"]: c for c in map(json.loads, checks.stdout.splitlines())}
    return table.returncode, by_area, table.stdout


@pytest.fixture
def cron_db(cron_dsn: str) -> Iterator[tuple[psycopg.Connection, str]]:
    """The pg_cron database and a tenant of this test there (doctor reads pg_cron only
    where it is installed); its cron jobs are put back as they were and the tenant
    dropped at the end."""
    conn = psycopg.connect(cron_dsn, autocommit=True)
    tenant = f"doctor_{uuid.uuid4().hex[:8]}"
    conn.execute("select pgmem.create_tenant(%s)", (tenant,))
    before = [r[0] for r in conn.execute("select jobname from pgmem.scheduled_jobs()")]
    try:
        yield conn, tenant
    finally:
        conn.execute("select pgmem.drop_tenant(%s)", (tenant,))
        conn.execute("select pgmem.unschedule()")
        if before:
            conn.execute("select pgmem.schedule()")
        conn.close()


@pytest.mark.slow  # loads the embedding model
def test_doctor_on_a_healthy_server(cron_db: tuple[psycopg.Connection, str], cron_dsn: str) -> None:
    cron_db[0].execute("select pgmem.schedule()")
    code, checks, screen = _doctor(cron_dsn)
    assert code == 0, screen
    for area in (
        "server",
        "schema",
        "vector",
        "pg_cron",
        "roles",
        "rls",
        "cron jobs",
        "tenants",
        "embedder",
        "llm",
    ):
        assert checks[area]["status"] == "ok", checks[area]
    assert "fail" not in {c["status"] for c in checks.values()}
    assert "loaded and embedded" in screen
    assert re.search(r"^ok\s+cron jobs\s+9 scheduled", screen, re.MULTILINE), screen


def test_doctor_warns_about_unscheduled_jobs_backlog_and_failed_jobs(
    cron_db: tuple[psycopg.Connection, str], cron_dsn: str
) -> None:
    conn, tenant = cron_db
    conn.execute("select pgmem.unschedule()")
    with conn.transaction():
        conn.execute("select pgmem.set_tenant(%s)", (tenant,))
        for _ in range(2):
            conn.execute("""select pgmem.enqueue('bob', '[{"role": "user", "content": "hi"}]')""")
        conn.execute(
            "update pgmem.inbox set status = 'failed', attempts = 5,"
            " last_error = 'LLM endpoint said 500' where inbox_id = ("
            "  select min(inbox_id) from pgmem.inbox where tenant_id = %(t)s)"
            " and tenant_id = %(t)s",
            {"t": tenant},
        )
        conn.execute(
            "update pgmem.inbox set available_at = now() - interval '1 hour'"
            " where tenant_id = %s and status = 'pending'",
            (tenant,),
        )
    code, checks, screen = _doctor(cron_dsn, "--no-embed")
    assert code == 0, screen  # warnings, nothing failed
    assert checks["cron jobs"]["status"] == "warn"
    assert "pgmem-decay" in checks["cron jobs"]["detail"]
    assert checks["cron jobs"]["fix"] == "`pgmem schedule` installs them"
    assert checks["inbox"]["status"] == "warn" and "pgmem worker" in checks["inbox"]["fix"]
    assert checks["failed jobs"]["status"] == "warn"
    assert "LLM endpoint said 500" in checks["failed jobs"]["detail"]
    assert "pgmem.retry_failed_jobs()" in checks["failed jobs"]["fix"]
    assert re.search(r"^warn\s+cron jobs", screen, re.MULTILINE), screen
    assert "fix: `pgmem schedule`" in screen


def test_doctor_fails_clearly(
    dsn: str, admin: psycopg.Connection, empty_dsn: str, unique: Callable[[str], str]
) -> None:
    stopped = f"postgresql://postgres@127.0.0.1:{_closed_port()}/pgmem"
    code, _, screen = _doctor(stopped, "--no-embed")
    assert code == 3 and re.search(r"^fail\s+server", screen, re.MULTILINE), screen
    assert "fix: `pgmem db start`" in screen

    code, checks, screen = _doctor(empty_dsn, "--no-embed")
    assert code == 1 and checks["schema"]["fix"] == "`pgmem migrate`", screen

    # A tenant table without FORCE is a failure that names the fix.
    admin.execute("alter table pgmem.memory_links no force row level security")
    code, checks, screen = _doctor(dsn, "--no-embed")
    assert code == 1, screen
    assert checks["rls"]["status"] == "fail" and "memory_links" in checks["rls"]["detail"]
    assert "pgmem migrate" in checks["rls"]["fix"]
    # Outside the cron database, pg_cron is a warning with a way out.
    assert checks["pg_cron"]["status"] == "warn" and "pgmem maintain" in checks["pg_cron"]["fix"]


def test_doctor_names_an_embedder_that_does_not_fit(dsn: str) -> None:
    """An OpenAI embedder of another size than the tenants store fails the dims check."""
    env = _env(OPENAI_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1", PGMEM_EMBED_DIMS="1536")
    env["PGMEM_EMBED_MODEL"] = "text-embedding-3-small"
    result = subprocess.run(
        [str(PGMEM), "doctor", "--no-embed", "--jsonl", "--dsn", dsn],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    checks = {c["area"]: c for c in map(json.loads, result.stdout.splitlines())}
    assert checks["embedding dims"]["status"] == "fail"
    assert "1536" in checks["embedding dims"]["detail"]
    assert checks["llm"]["status"] == "fail" and "OPENAI_BASE_URL" in checks["llm"]["fix"]


def test_app_object_still_runs_under_typers_test_runner() -> None:
    """tests and embedders invoke `app` directly; the lazy verbs must work there too."""
    from typer.testing import CliRunner

    from pgmem.cli.app import app

    result = CliRunner().invoke(app, ["db", "--help"])
    assert result.exit_code == 0 and "status" in result.output
    assert isinstance(app, typer.Typer)


def test_doctor_names_the_database_it_checked(dsn: str) -> None:
    checks = {
        c["area"]: c
        for c in map(
            json.loads,
            subprocess.run(
                [str(PGMEM), "doctor", "--no-embed", "--jsonl", "--dsn", dsn],
                capture_output=True,
                text=True,
                env=_env(),
                check=False,
            ).stdout.splitlines(),
        )
    }
    dbname = psycopg.conninfo.conninfo_to_dict(make_conninfo(dsn))["dbname"]
    assert f"database {dbname}" in checks["server"]["detail"]
