"""README.md documents every public SQL function, view and CLI verb."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import typer

from pgmem.cli.app import app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _verbs(typer_app: typer.Typer, prefix: str = "") -> set[str]:
    verbs = {prefix + (c.name or c.callback.__name__) for c in typer_app.registered_commands}  # type: ignore[union-attr]
    for group in typer_app.registered_groups:
        assert group.typer_instance is not None
        verbs |= _verbs(group.typer_instance, f"{prefix}{group.name} ")
    return verbs


def test_every_cli_verb_is_in_the_readme() -> None:
    missing = sorted(v for v in _verbs(app) if f"pgmem {v}" not in README)
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
