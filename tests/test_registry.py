"""One place for SQL: statements live in pgmem.queries, functions in sql/functions.

Scans the Python sources for string literals that are SQL statements, checks that
the registry names each distinct statement once, and that the copies of recall's
column list that must exist (two function signatures, one select list) agree.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import psycopg
from conftest import Db
from psycopg import sql as psql

from pgmem import queries

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "pgmem" / "queries"
# Every module of the registry, found on disk: a new one is checked without being listed.
REGISTRY_MODULES = tuple(
    importlib.import_module(f"pgmem.queries.{info.name}")
    for info in pkgutil.iter_modules([str(REGISTRY)])
)

# A string literal that starts like a statement: an SQL verb and something after it.
_STATEMENT = re.compile(
    r"^\s*(select|insert|update|delete|with|set|reset|listen|notify|create|alter|drop|grant"
    r"|revoke|call|do|copy|truncate|vacuum|analyze|explain|comment)\s+\S",
    re.IGNORECASE,
)
# Help texts that happen to start with an SQL verb ("Set tenant settings …",
# "Do not ask …", "Create a tenant …") are sentences: a capital, then lower case.
_SENTENCE = re.compile(r"^\s*[A-Z][a-z]+ [a-z]")


def _sql_literals(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
        else:
            continue
        if _STATEMENT.match(text) and not _SENTENCE.match(text):
            found.append((node.lineno, text.strip().splitlines()[0]))
    return found


def test_no_sql_text_outside_the_registry() -> None:
    offenders = []
    for top in ("pgmem", "cli"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_relative_to(REGISTRY):
                continue
            offenders += [f"{rel}:{line}: {text}" for line, text in _sql_literals(path)]
    assert offenders == [], "SQL text belongs in pgmem/queries/:\n" + "\n".join(offenders)


def _statements() -> dict[str, str]:
    named = {}
    for module in REGISTRY_MODULES:
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str | psql.SQL):
                text = value if isinstance(value, str) else value.as_string(None)
                named[f"{module.__name__.rsplit('.', 1)[1]}.{name}"] = text
    return named


def test_the_scanner_sees_the_registry() -> None:
    """The scan above would find every registry statement, were it elsewhere."""
    names = (".CHANNEL", ".VERSION_TABLE")
    statements = {n: t for n, t in _statements().items() if not n.endswith(names)}
    missed = [n for n, t in statements.items() if not _STATEMENT.match(t)]
    assert statements and missed == []


def test_distinct_statements_have_distinct_names() -> None:
    by_text: dict[str, list[str]] = {}
    for name, text in _statements().items():
        by_text.setdefault(" ".join(text.split()).lower(), []).append(name)
    assert [names for names in by_text.values() if len(names) > 1] == []


def _out_columns(conn: psycopg.Connection, function: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        """
        select a.name, pg_catalog.format_type(a.type, null)
        from pg_catalog.pg_proc as p,
             unnest(p.proargnames, p.proallargtypes, p.proargmodes::text[])
                 with ordinality as a(name, type, mode, n)
        where p.oid = %s::regproc and a.mode = 't'
        order by a.n
        """,
        (function,),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def test_recall_column_lists_agree(db: Db) -> None:
    """pgmem._recall, pgmem.recall and the client's RECALL select list name the same
    columns in the same order (a composite type would need a migration per change)."""
    inner = _out_columns(db.admin, "pgmem._recall")
    outer = _out_columns(db.admin, "pgmem.recall")
    assert inner and inner == outer
    select_list = queries.RECALL.split("from pgmem.recall(")[0]
    assert re.findall(r"\br\.(\w+)", select_list) == [name for name, _ in outer]
