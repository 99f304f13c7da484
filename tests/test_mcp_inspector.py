"""`pgmem mcp` driven by the official MCP Inspector's CLI (npm
@modelcontextprotocol/inspector, installed under tests/inspector by `make setup`):
over stdio and over streamable HTTP with a bearer token, the client nobody here
wrote lists the tools, calls them, reads the resource, and meets pgmem's errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (make setup installs it)")

from conftest import Db, Tenant
from test_mcp import serve_http

INSPECTOR = Path(__file__).parent / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
PGMEM = str(Path(sys.executable).with_name("pgmem"))


@pytest.fixture
def inspector(tmp_path: Path) -> Callable[..., tuple[int, Any]]:
    if not INSPECTOR.exists():
        pytest.fail(f"{INSPECTOR} is missing: `make setup` installs the MCP Inspector")

    def run(*args: str) -> tuple[int, Any]:
        """The Inspector CLI's exit code and the JSON document it printed first."""
        done = subprocess.run(
            [str(INSPECTOR), "--cli", *args],
            capture_output=True, text=True, timeout=120, check=False,
            # Its catalog of servers is written under the test's own folder.
            env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")},
        )  # fmt: skip
        decoder = json.JSONDecoder()
        text = done.stdout.lstrip()
        assert text, done.stderr
        document, _ = decoder.raw_decode(text)
        return done.returncode, document

    return run


def stdio(tenant: Tenant, *args: str) -> list[str]:
    """Inspector arguments for pgmem mcp over stdio as ``tenant``'s login role."""
    return ["-e", f"PGMEM_DSN={tenant.dsn}", *args, "--", PGMEM, "mcp", "--no-embed"]


def test_the_inspector_lists_and_calls_every_kind_of_tool(
    db: Db, new_tenant: Callable[[], Tenant], inspector: Callable[..., tuple[int, Any]]
) -> None:
    acme = new_tenant()
    code, listed = inspector(*stdio(acme, "--method", "tools/list"))
    assert code == 0
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert {"remember", "recall", "context", "append_turn", "prompt", "start_task"} <= set(tools)
    for tool in tools.values():
        schema = tool["inputSchema"]
        assert tool["description"] and schema["additionalProperties"] is False, tool["name"]
        if "user" in schema["properties"]:
            assert "user" in schema["required"], tool["name"]

    code, stored = inspector(
        *stdio(
            acme,
            "--method", "tools/call", "--tool-name", "remember",
            "--tool-arg", "text=Alice grows tomatoes", "user=alice", "infer=false",
        )
    )  # fmt: skip
    assert code == 0 and stored.get("isError") is not True, stored
    assert stored["structuredContent"]["result"][0]["action"] == "inserted"
    code, hits = inspector(
        *stdio(
            acme,
            "--method", "tools/call", "--tool-name", "recall",
            "--tool-arg", "query=tomatoes", "user=alice",
        )
    )  # fmt: skip
    assert hits["structuredContent"]["result"][0]["content"] == "Alice grows tomatoes"

    code, templates = inspector(*stdio(acme, "--method", "resources/templates/list"))
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == ["pgmem://memories/{user}"]
    code, read = inspector(
        *stdio(acme, "--method", "resources/read", "--uri", "pgmem://memories/alice")
    )
    assert "Alice grows tomatoes" in read["contents"][0]["text"]


def test_the_inspector_meets_one_line_errors(
    db: Db, new_tenant: Callable[[], Tenant], inspector: Callable[..., tuple[int, Any]]
) -> None:
    acme = new_tenant()
    for arguments, named in (
        (["query=tea", "user=alice", "k=500"], "`k`"),
        (["query=tea"], "`user` is required"),
        (["query=tea", "user=alice", "colour=red"], "unknown argument `colour`"),
    ):
        code, result = inspector(
            *stdio(
                acme, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", *arguments
            )
        )
        assert code != 0 and result["isError"] is True
        (block,) = result["content"]
        assert named in block["text"] and "\n" not in block["text"], block
    assert acme.conn.execute("select count(*) from pgmem.memories").fetchone() == (0,)


def test_the_inspector_over_http_needs_the_tenants_token(
    db: Db, new_tenant: Callable[[], Tenant], inspector: Callable[..., tuple[int, Any]]
) -> None:
    acme = new_tenant()
    with psycopg.connect(db.dsn, autocommit=True) as admin:
        row = admin.execute(
            "select pgmem.create_mcp_token(%s, 'inspector')", (acme.name,)
        ).fetchone()
    assert row is not None
    with serve_http(acme.dsn, "--auth") as url:
        code, listed = inspector(
            "--transport", "http", "--server-url", url,
            "--header", f"Authorization: Bearer {row[0]}", "--method", "tools/list",
        )  # fmt: skip
        assert code == 0 and "remember" in {t["name"] for t in listed["tools"]}
        refused = subprocess.run(
            [str(INSPECTOR), "--cli", "--transport", "http", "--server-url", url,
             "--method", "tools/list"],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "MCP_CATALOG_PATH": os.devnull},
        )  # fmt: skip
        assert refused.returncode != 0 and "tools" not in refused.stdout
