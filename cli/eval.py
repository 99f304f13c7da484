"""`pgmem eval locomo`: retrieval quality of pgmem.recall on LoCoMo conversations."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import psycopg
import typer
from rich import box
from rich.table import Table

from pgmem.cli.common import (
    DsnOption,
    JsonOption,
    console,
    database_errors,
    dsn_for,
    err_console,
    fail,
)
from pgmem.embed import EmbeddingError, embedder_from_env
from pgmem.lab import eval as evaluation

app = typer.Typer(help="Measure retrieval quality on public benchmarks.", no_args_is_help=True)


def _parse_settings(pairs: list[str]) -> dict[str, object]:
    settings: dict[str, object] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise fail(f"--set takes name=value (a pgmem.settings column), not {pair!r}")
        settings[name.strip()] = value.strip()
    return settings


def _parse_modes(values: list[str]) -> list[str]:
    modes = [m.strip() for value in values for m in value.split(",") if m.strip()]
    unknown = [m for m in modes if m not in evaluation.MODES]
    if unknown:
        raise fail(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(evaluation.MODES)}")
    return modes or list(evaluation.MODES)


@app.command()
def locomo(
    path: Annotated[
        Path,
        typer.Argument(
            help="LoCoMo JSON file (a list of samples, e.g. locomo10.json).",
            exists=True,
            dir_okay=False,
        ),
    ],
    dsn: DsnOption = None,
    modes: Annotated[
        list[str] | None,
        typer.Option(
            "--modes",
            "-m",
            help="Modes to measure, repeated or comma-separated (default: all): "
            + ", ".join(evaluation.MODES)
            + ".",
        ),
    ] = None,
    limit_conversations: Annotated[
        int | None,
        typer.Option("--limit-conversations", min=1, help="Only the first N conversations."),
    ] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Tenant setting for the run, name=value (e.g. w_recency=0); repeatable.",
        ),
    ] = None,
    captions: Annotated[
        bool, typer.Option("--captions", help="Append shared images' BLIP captions to their turns.")
    ] = False,
    database: Annotated[
        str, typer.Option("--database", help="Scratch database, created and dropped on the server.")
    ] = evaluation.DEFAULT_DATABASE,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the scratch database for inspection.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Ingest LoCoMo conversations as memories; report recall@5/@10 of the evidence turns.

    Turns become episodic memories dated with their session and linked to their neighbours;
    questions (adversarial ones skipped) go through pgmem.recall without reinforcement.
    See docs/eval.md.
    """
    chosen = _parse_modes(modes or [])
    overrides = _parse_settings(settings or [])
    server = dsn_for(dsn)

    def progress(message: str) -> None:
        if not as_json:
            err_console.print(f"[dim]{message}[/dim]", highlight=False)

    with database_errors():
        try:
            report = evaluation.run_locomo(
                server,
                path,
                embedder_from_env(),
                database=database,
                keep=keep,
                limit_conversations=limit_conversations,
                modes=chosen,
                settings=overrides,
                captions=captions,
                progress=progress,
            )
        except (evaluation.EvalError, EmbeddingError) as exc:
            raise fail(str(exc)) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise fail(
                f"{exc.diag.message_primary}: pgmem eval needs a superuser DSN "
                "(it creates a database and acts as pgmem_service)"
            ) from None
    if as_json:
        json.dump(report.as_dict(), sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
        return
    print_report(report)


def print_report(report: evaluation.Report) -> None:
    """One table per k: a row per mode, a column per question category and overall."""
    labels = list(report.results[0].recall) if report.results else []
    for k in report.ks:
        table = Table(
            title=f"recall@{k} of evidence turns",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        table.add_column("mode", no_wrap=True)
        for label in labels:
            asked = report.questions.get(label, sum(report.questions.values()))
            table.add_column(f"{label}\n({asked})", justify="right", min_width=len(label))
        table.add_column("s", justify="right")
        for result in report.results:
            table.add_row(
                result.mode,
                *(f"{result.recall[label][k]:.3f}" for label in labels),
                f"{result.seconds:.1f}",
            )
        console.print(table)
    skipped = ", ".join(f"{n} {label}" for label, n in report.skipped.items()) or "none"
    console.print(
        f"{report.conversations} conversations, {report.turns} turns -> "
        f"{report.memories} memories, {report.links} links; skipped questions: {skipped}",
        highlight=False,
    )
    console.print(
        "settings: "
        + ", ".join(f"{k}={evaluation.setting_text(v)}" for k, v in report.settings.items()),
        highlight=False,
    )
    console.print(
        f"embedder {report.embedder}; embedding {report.embed_seconds:.1f} s, storing "
        f"{report.store_seconds:.1f} s, total {report.total_seconds:.1f} s",
        highlight=False,
    )
