"""README.md documents every public SQL function, view and CLI verb."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import psycopg

from pgmem.cli.app import VERBS, load_verb

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _verbs(command: Any, prefix: str) -> set[str]:
    """The command's full name, or those of the commands of a group, recursively."""
    children = getattr(command, "commands", None)
    if not children:
        return {prefix}
    return set().union(*(_verbs(c, f"{prefix} {name}") for name, c in children.items()))


def _all_verbs() -> set[str]:
    # Every verb of the root (app.VERBS, which loads them lazily), each built for real.
    return set().union(*(_verbs(load_verb(name), name) for name in VERBS))


def test_every_cli_verb_is_in_the_readme() -> None:
    missing = sorted(v for v in _all_verbs() if f"pgmem {v}" not in README)
    assert missing == [], f"README.md does not show: {missing}"


def test_every_public_function_and_view_is_in_the_readme(admin: psycopg.Connection) -> None:
    names = {
        r[0]
        for r in admin.execute(
            """
            select p.proname from pg_proc p
            where p.pronamespace = 'pgmem'::regnamespace and p.proname !~ '^_'
            union
            select c.relname from pg_class c
            where c.relnamespace = 'pgmem'::regnamespace and c.relkind = 'v'
              and c.relname !~ '^_'
            """
        )
    }
    documented = set(re.findall(r"pgmem\.([a-z][a-z0-9_]*)", README))
    assert sorted(names - documented) == []
