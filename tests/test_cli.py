"""The memory verbs of the `pgmem` command, run as a subprocess against a real
database: output for people and for scripts, and exit codes scripts can trust
(0 ok, 1 error with one line on stderr, 2 usage, 4 not found)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgmem import Memory
from pgmem.embed import LocalEmbedder

PGMEM = Path(sys.executable).parent / "pgmem"
# As in conftest: roles with this prefix are dropped at the end of the session.
TEST_ROLE_PREFIX = f"pgmem_t_test{os.getpid()}"

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    model = LocalEmbedder()
    model.load()
    return model


@pytest.fixture
def pgmem(dsn: str, admin: psycopg.Connection) -> Run:
    """Runs `pgmem <args> --dsn <test database>`; tenants acme and bravo exist."""
    admin.execute("select pgmem.create_tenant('acme')")
    admin.execute("select pgmem.create_tenant('bravo')")
    # Nothing from the caller's environment decides where, for whom or with what model.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PGMEM_", "OPENAI_")) or k == "PGMEM_HOME"
    }
    env["COLUMNS"] = "200"

    def run(
        *args: str, input: str | None = None, target: str = dsn
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PGMEM), *args, "--dsn", target],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )

    return run


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    return result


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(result).stdout)


def one_line_error(result: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert text in result.stderr


@pytest.mark.slow  # two subprocesses load the embedding model
def test_add_search_list_show_history_context(pgmem: Run) -> None:
    added = as_json(
        pgmem(
            "add", "I live in Berlin and I prefer dark mode", "-u", "alice", "-t", "acme", "--json"
        )
    )
    assert isinstance(added, list)
    said = "I live in Berlin and I prefer dark mode"
    assert [(a["action"], a["content"]) for a in added] == [
        ("inserted", said),  # the turn, on record
        ("inserted", "User lives in Berlin"),
        ("inserted", "User prefers dark theme"),
    ]
    turn, berlin = added[0]["memory_id"], added[1]["memory_id"]

    hits = as_json(
        pgmem("search", "Which city does the user live in?", "-u", "alice", "-t", "acme", "--json")
    )
    assert isinstance(hits, list)
    assert hits[0]["memory_id"] in (berlin, turn)
    assert {"score", "relevance", "similarity", "text_match", "importance", "recency"} <= hits[
        0
    ].keys()

    listed = as_json(pgmem("list", "-t", "acme", "--json"))
    assert isinstance(listed, list)
    assert {r["content"] for r in listed} == {
        said,
        "User lives in Berlin",
        "User prefers dark theme",
    }
    assert "User lives in Berlin" in ok(pgmem("list", "-t", "acme", "-u", "alice")).stdout

    shown = as_json(pgmem("show", str(berlin), "-t", "acme", "--json"))
    assert isinstance(shown, dict)
    assert (shown["content"], shown["triple_predicate"], shown["status"]) == (
        "User lives in Berlin",
        "lives_in",
        "active",
    )
    assert "lives_in" in ok(pgmem("show", str(berlin), "-t", "acme")).stdout

    events = as_json(pgmem("history", str(berlin), "-t", "acme", "--json"))
    assert isinstance(events, list)
    assert [e["event"] for e in events] == ["insert"]
    assert "insert" in ok(pgmem("history", str(berlin), "-t", "acme")).stdout

    block = ok(pgmem("context", "about the user", "-u", "alice", "-t", "acme", "--no-embed")).stdout
    assert "## Preferences" in block and "User prefers dark theme" in block
    stats = as_json(pgmem("stats", "-t", "acme", "--json"))
    assert isinstance(stats, dict)
    assert sum(r["memories"] for r in stats["memories"]) == 3
    assert "capacity use" in ok(pgmem("stats", "-t", "acme")).stdout


def test_forget_pin_erase(pgmem: Run) -> None:
    tea, chess = (
        as_json(pgmem("add", text, "--raw", "--no-embed", "-u", "bob", "-t", "acme", "--json"))[0][
            "memory_id"
        ]
        for text in ("Likes green tea", "Plays chess on Sundays")
    )
    assert "pinned" in ok(pgmem("pin", str(tea), "-t", "acme")).stdout
    assert "already" in ok(pgmem("pin", str(tea), "-t", "acme")).stdout
    assert as_json(pgmem("pin", str(tea), "--unpin", "-t", "acme", "--json")) == {
        "memory_id": tea,
        "pinned": False,
        "changed": True,
    }
    assert as_json(pgmem("forget", str(chess), "-t", "acme", "--json")) == {
        "memory_id": chess,
        "forgotten": True,
    }
    assert "already" in ok(pgmem("forget", str(chess), "-t", "acme")).stdout
    events = as_json(pgmem("history", str(tea), "-t", "acme", "--json"))
    assert [e["event"] for e in events] == ["insert", "pin", "unpin"]
    deleted = as_json(pgmem("list", "-t", "acme", "--status", "deleted", "--json"))
    assert [r["memory_id"] for r in deleted] == [chess]

    # Without --yes, erase asks; "n" keeps everything.
    refused = pgmem("erase", "-u", "bob", "-t", "acme", input="n\n")
    assert refused.returncode == 1
    assert len(as_json(pgmem("list", "-t", "acme", "--status", "all", "--json"))) == 2
    assert as_json(pgmem("erase", "-u", "bob", "-t", "acme", "--yes", "--json")) == {
        "subject": "bob",
        "memories": 2,
    }
    assert as_json(pgmem("list", "-t", "acme", "--status", "all", "--json")) == []
    assert ok(pgmem("erase", "-u", "bob", "-t", "acme", "-y")).stdout.startswith("erased bob: 0")


def test_export_then_import_into_another_tenant(
    pgmem: Run, dsn: str, embedder: LocalEmbedder, tmp_path: Path
) -> None:
    with Memory(dsn, tenant="acme", embedder=embedder, llm=False) as acme:
        acme.add("I prefer dark mode. I work at SAP.", "carol", session_id="s1")
        acme.add("I prefer light mode", "carol")  # supersedes dark: exported, not imported
        pinned = acme.add("Allergic to nuts", "carol", infer=False, importance=0.9)
        acme.pin(pinned[0]["memory_id"])
        acme.add("Visits Oslo in June", "dan", infer=False, kind="episodic", metadata={"trip": 1})

    dump = tmp_path / "acme.jsonl"
    # Two turns on record beside their three facts, and the two texts kept as written.
    assert "exported 7 memories" in ok(pgmem("export", str(dump), "-t", "acme")).stdout
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(lines) == 7
    assert {line["status"] for line in lines} == {"active", "superseded"}
    assert all(len(line["embedding"]) == 384 for line in lines)
    only_dan = ok(pgmem("export", "-t", "acme", "-u", "dan")).stdout.splitlines()
    assert [json.loads(line)["content"] for line in only_dan] == ["Visits Oslo in June"]

    counts = as_json(pgmem("import", str(dump), "-t", "bravo", "--json"))
    assert counts == {"inserted": 6, "skipped": 1, "pinned": 1}

    copied = {
        row["content"]: row
        for row in map(json.loads, ok(pgmem("export", "-t", "bravo")).stdout.splitlines())
    }
    originals = {line["content"]: line for line in lines if line["status"] == "active"}
    assert copied.keys() == originals.keys()
    for content, row in copied.items():
        original = originals[content]
        for field in (
            "subject",
            "kind",
            "importance",
            "valid_from",
            "session_id",
            "metadata",
            "triple_predicate",
            "pinned",
            "embedding",
        ):
            assert row[field] == original[field], (content, field)

    # From stdin, again: every fact is known already.
    again = as_json(pgmem("import", "-", "-t", "bravo", "--json", input=dump.read_text()))
    assert again == {"reinforced": 6, "skipped": 1, "pinned": 0}


def test_bad_input_exits_1_with_one_line(pgmem: Run, tmp_path: Path) -> None:
    one_line_error(
        pgmem("search", "tea", "-u", "a", "-k", "0", "-t", "acme", "--no-embed"), 1, "k must be"
    )
    one_line_error(
        pgmem("add", "x", "--raw", "-u", "a", "-t", "acme", "--no-embed", "--metadata", "[1]"),
        1,
        "--metadata must be a JSON object",
    )
    one_line_error(
        pgmem("add", "x", "--raw", "-u", "a", "-t", "nope", "--no-embed"), 1, "unknown pgmem tenant"
    )
    one_line_error(
        pgmem("add", "x", "--raw", "--kind", "feeling", "-u", "a", "-t", "acme", "--no-embed"),
        1,
        "is not a memory kind",
    )
    one_line_error(pgmem("list"), 1, "no pgmem tenant is bound")
    one_line_error(pgmem("add", "  ", "--raw", "-u", "a", "-t", "acme"), 1, "the text is empty")

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"subject": "a", "content": "fine"}\n\n{"subject": "a", "content": ""}\n')
    one_line_error(pgmem("import", str(bad), "-t", "acme", "--no-embed"), 1, "line 3:")
    bad.write_text('{"subject": "a", "content": "fine"}\nnot json\n')
    one_line_error(pgmem("import", str(bad), "-t", "acme", "--no-embed"), 1, "line 2: not JSON")
    one_line_error(
        pgmem("import", str(tmp_path / "missing.jsonl"), "-t", "acme"), 1, "no such file"
    )
    # All or nothing: the good first lines were not kept.
    assert as_json(pgmem("list", "-t", "acme", "--status", "all", "--json")) == []


def test_unknown_id_exits_4(pgmem: Run) -> None:
    for verb in ("show", "history", "forget", "pin"):
        one_line_error(pgmem(verb, "999999", "-t", "acme"), 4, "999999")


def test_usage_errors_exit_2(pgmem: Run) -> None:
    assert pgmem("search", "tea", "-t", "acme").returncode == 2  # --user missing
    assert pgmem("show", "not-a-number", "-t", "acme").returncode == 2


def test_tenant_login_dsn_needs_no_tenant_option(
    pgmem: Run, admin: psycopg.Connection, dsn: str, unique: Callable[[str], str]
) -> None:
    role, password = unique(f"{TEST_ROLE_PREFIX}_cli"), uuid.uuid4().hex
    admin.execute("select pgmem.create_tenant_login('acme', %s, %s)", (password, role))
    login = make_conninfo(dsn, user=role, password=password)
    ok(pgmem("add", "Likes jazz", "--raw", "--no-embed", "-u", "eve", target=login))
    rows = as_json(pgmem("list", "--json", target=login))
    assert [r["content"] for r in rows] == ["Likes jazz"]
    one_line_error(pgmem("list", "-t", "bravo", target=login), 1, "acts for tenant 'acme'")


def test_search_and_context_scope_and_time(pgmem: Run, admin: psycopg.Connection) -> None:
    """--shared, --agent, --since/--until and a time in the query."""
    for user, text, agent in (
        ("alice", "Alice hikes in the Alps", "planner"),
        ("team", "The team hikes every spring", None),
        ("alice", "Alice hikes with a guide", None),
    ):
        extra = ["--agent", agent] if agent else []
        ok(pgmem("add", text, "-u", user, "-t", "acme", "--raw", "--no-embed", *extra))
    # Written when they happened, before the --now asked below (a fact
    # written after that time is not known at it).
    admin.execute(
        "update pgmem.memories set created_at = '2026-11-25', valid_from = '2026-11-25'"
        " where content like '%Alps%'"
    )
    admin.execute(
        "update pgmem.memories set created_at = '2026-06-01', valid_from = '2026-06-01'"
        " where content like '%guide%'"
    )
    base = ["-u", "alice", "-t", "acme", "--no-embed", "--no-reinforce", "--json"]
    rows = as_json(pgmem("search", "hikes", *base, "--shared", "team"))
    assert {(r["subject"], r["content"]) for r in rows} == {
        ("alice", "Alice hikes in the Alps"),
        ("alice", "Alice hikes with a guide"),
        ("team", "The team hikes every spring"),
    }
    rows = as_json(pgmem("search", "hikes", *base, "--agent", "planner"))
    assert [r["content"] for r in rows] == ["Alice hikes in the Alps"]
    now = ["--now", "2026-12-01T12:00:00+00:00"]
    rows = as_json(pgmem("search", "where did I hike last week", *base, *now))
    assert [r["content"] for r in rows] == ["Alice hikes in the Alps"]
    rows = as_json(pgmem("search", "where did I hike last week", *base, *now, "--no-time"))
    assert len(rows) == 2
    rows = as_json(
        pgmem("search", "hikes", *base, "--since", "2026-05-01", "--until", "2026-07-01")
    )
    assert [r["content"] for r in rows] == ["Alice hikes with a guide"]
    block = as_json(
        pgmem(
            "context",
            "hikes",
            "-u",
            "alice",
            "-t",
            "acme",
            "--no-embed",
            "--json",
            "--shared",
            "team",
            "--since",
            "2026-11-01",
        )
    )["context"]
    assert "(team) The team hikes every spring" in block and "guide" not in block


def test_tenant_tokens_are_made_listed_and_revoked(pgmem: Run, admin: psycopg.Connection) -> None:
    made = pgmem("tenant", "token", "acme", "--label", "desk", "--user", "alice")
    assert made.returncode == 0, made.stderr
    (token,) = re.findall(r"pgmem_[0-9a-f]{64}", made.stdout)
    assert admin.execute(
        "select tenant_id, subject from pgmem.mcp_token(%s)", (token,)
    ).fetchall() == [("acme", "alice")]
    again = pgmem("tenant", "token", "acme", "--label", "desk")
    assert again.returncode == 1 and "PM006" in again.stderr
    listed = pgmem("tenant", "tokens", "acme", "--json")
    assert [(r["label"], r["subject"]) for r in json.loads(listed.stdout)] == [("desk", "alice")]
    assert token not in listed.stdout
    assert pgmem("tenant", "revoke-token", "acme", "--label", "desk").returncode == 0
    assert admin.execute("select * from pgmem.mcp_token(%s)", (token,)).fetchall() == []
    assert pgmem("tenant", "revoke-token", "acme", "--label", "desk").returncode == 4
