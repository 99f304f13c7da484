"""`pgmem doctor`: one screen that checks the whole setup and says how to fix it.

Each line is ok, warn or fail, with what was found and, when it is not ok, the fix.
The database checks are ``pgmem.doctor()`` (sql/functions/75_doctor.sql), so psql
users get the same diagnosis; this verb adds what only the client can see: whether
the server answers, the schema revision against this package, whether the embedding
model loads (and its size against the tenants'), and whether a configured LLM
endpoint answers.

Exit codes: 0 when nothing failed (warnings allowed), 1 when a check failed,
3 when the server cannot be reached.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import psycopg
import typer
from psycopg.rows import dict_row
from rich.table import Table
from rich.text import Text

from pgmem import server
from pgmem.cli.common import (
    EXIT_ERROR,
    EXIT_UNREACHABLE,
    DsnOption,
    JsonlOption,
    JsonOption,
    console,
    err_console,
    output_format,
    print_json,
    unreachable,
)
from pgmem.config import Config
from pgmem.queries import doctor as queries

Check = dict[str, Any]
STYLES = {"ok": "green", "warn": "yellow", "fail": "red"}
# The LLM check asks the endpoint for its model list once, without retries.
LLM_TIMEOUT = 5.0


def _check(area: str, status: str, detail: str, fix: str | None = None) -> Check:
    return {"area": area, "status": status, "detail": detail, "fix": fix}


def _connect(config: Config) -> tuple[str | None, Check]:
    """The DSN to use and the server check; no DSN when the server does not answer."""
    if config.dsn is None:
        current = server.status(config)
        if not current.running:
            state = "no cluster yet" if not current.initialized else "stopped"
            return None, _check(
                "server",
                "fail",
                f"the embedded server is {state} ({current.cluster.data_dir})",
                "`pgmem db start`",
            )
    url = config.dsn or server.dsn(config)
    try:
        with psycopg.connect(url, row_factory=dict_row, connect_timeout=5) as conn:
            row = conn.execute(queries.SERVER).fetchone()
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0]
        stopped = config.dsn is None or unreachable(exc)
        fix = "`pgmem db start`" if stopped else "fix --dsn / PGMEM_DSN"
        return None, _check("server", "fail", f"{server.redact(url)}: {reason}", fix)
    assert row is not None
    where = server.redact(url) if config.dsn else f"the embedded server, port {config.port}"
    return url, _check(
        "server",
        "ok",
        f"PostgreSQL {row['version'].split()[0]} at {where}: "
        f"database {row['database']} as {row['role']}",
    )


def _schema(url: str) -> Check:
    from pgmem import schema

    info = schema.status(url)
    if info["revision"] is None:
        return _check("schema", "fail", "no pgmem schema in this database", "`pgmem migrate`")
    if info["revision"] != info["head"]:
        return _check(
            "schema",
            "fail",
            f"at revision {info['revision']}, this pgmem needs {info['head']}",
            "`pgmem migrate`",
        )
    return _check("schema", "ok", f"at head ({info['head']}), {info['dims']}-dim embeddings")


def _embedder(load: bool) -> tuple[Check, Any]:
    """Whether the configured embedder works: builds it and embeds one sentence."""
    from pgmem.embed import EmbeddingError, embedder_from_env

    try:
        embedder = embedder_from_env()
    except EmbeddingError as exc:
        return _check("embedder", "fail", str(exc), "fix PGMEM_EMBEDDER / PGMEM_EMBED_*"), None
    if not load:
        detail = f"{embedder.model} ({embedder.dims} dims), not loaded (--no-embed)"
        return _check("embedder", "ok", detail), embedder
    started = time.perf_counter()
    try:
        with err_console.status(f"loading {embedder.model}…"):
            embedder.embed_one("pgmem doctor")
    except EmbeddingError as exc:
        fix = "`make setup` installs the local model; or set OPENAI_BASE_URL for an endpoint"
        return _check("embedder", "fail", str(exc), fix), None
    seconds = time.perf_counter() - started
    detail = f"{embedder.model} ({embedder.dims} dims): loaded and embedded in {seconds:.1f} s"
    return _check("embedder", "ok", detail), embedder


def _llm() -> Check:
    from pgmem.extract import LLMError, LLMExtractor

    try:
        llm = LLMExtractor.from_env()
    except LLMError as exc:
        return _check("llm", "fail", str(exc), "fix the PGMEM_LLM_* variables")
    if llm is None:
        return _check(
            "llm", "ok", "none configured: rules extract facts (OPENAI_BASE_URL enables an LLM)"
        )
    import openai

    where = f"{llm.model} at {llm.client.base_url}"
    try:
        with llm:
            llm.client.with_options(timeout=LLM_TIMEOUT, max_retries=0).models.list()
    except openai.AuthenticationError as exc:
        return _check("llm", "fail", f"{where}: key refused ({exc})", "fix OPENAI_API_KEY")
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        return _check(
            "llm",
            "fail",
            f"{where} does not answer: {exc}",
            "fix OPENAI_BASE_URL, or unset it to extract with rules",
        )
    except openai.APIStatusError:
        pass  # it answered; not every compatible server lists its models
    return _check("llm", "ok", f"{where} answers")


def run_checks(config: Config, *, load_model: bool) -> tuple[list[Check], bool]:
    """Every check in screen order, and whether the server was reachable."""
    url, reached = _connect(config)
    checks = [reached]
    if url is None:
        return checks, False
    checks.append(_schema(url))
    model_check, embedder = _embedder(load_model)
    database: list[Check] = []
    if checks[-1]["status"] != "fail":
        with psycopg.connect(url, row_factory=dict_row) as conn:
            database = conn.execute(
                queries.DOCTOR,
                {
                    "model": embedder.model if embedder else None,
                    "dims": embedder.dims if embedder else None,
                },
            ).fetchall()
    # The model right before the database's verdict on its size.
    split = next((i for i, c in enumerate(database) if c["area"] == "embedding dims"), None)
    if split is None:
        split = next((i for i, c in enumerate(database) if c["area"] == "inbox"), len(database))
    checks += [*database[:split], model_check, _llm(), *database[split:]]
    return checks, True


def doctor(
    no_embed: Annotated[
        bool,
        typer.Option("--no-embed", help="Do not load the embedding model (seconds when local)."),
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
    as_jsonl: JsonlOption = False,
) -> None:
    """Check the whole setup and say how to fix what is wrong.

    Server, schema, extensions, pg_cron and its jobs, roles, row-level security,
    embedder and its size against the tenants', LLM endpoint, worker queue. Each
    line is ok, warn or fail; a warn or fail line names the fix.

    Exit codes: 0 nothing failed, 1 a check failed, 3 server not reachable.
    """
    fmt = output_format(as_json, as_jsonl)
    checks, reached = run_checks(Config.from_env(dsn), load_model=not no_embed)
    if fmt != "table":
        print_json(checks, lines=fmt == "jsonl")
    else:
        console.print(_screen(checks))
        counts = {s: sum(c["status"] == s for c in checks) for s in STYLES}
        console.print(
            f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail", highlight=False
        )
    if not reached:
        raise typer.Exit(EXIT_UNREACHABLE)
    if any(c["status"] == "fail" for c in checks):
        raise typer.Exit(EXIT_ERROR)


def _screen(checks: list[Check]) -> Table:
    screen = Table(box=None, show_header=False, pad_edge=False)
    screen.add_column("status", no_wrap=True)
    screen.add_column("area", no_wrap=True, style="bold")
    screen.add_column("detail", overflow="fold")
    for check in checks:
        detail = Text(check["detail"])
        if check["fix"]:
            detail.append("\nfix: ", style="bold").append(check["fix"])
        screen.add_row(
            Text(check["status"], style=STYLES.get(check["status"], "")), check["area"], detail
        )
    return screen
