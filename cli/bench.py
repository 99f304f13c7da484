"""`pgmem bench`: latency, accuracy, throughput and size at 10k → 100k (→ 1M) memories."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import psycopg
import typer
from rich.table import Table

from pgmem import citus
from pgmem.cli.common import (
    DsnOption,
    JsonOption,
    console,
    database_errors,
    dsn_for,
    fail,
    steps,
)
from pgmem.embed import EmbeddingError, LocalEmbedder
from pgmem.lab import bench as benchmark
from pgmem.lab import bench_real, citus_bench, layers_bench, store_bench


def bench(
    dsn: DsnOption = None,
    full: Annotated[
        bool,
        typer.Option(
            "--full", help="Add the 1M point (1,000 subjects of 1,000 + 99 small tenants; ~15 min)."
        ),
    ] = False,
    scale: Annotated[
        list[int] | None,
        typer.Option(
            "--scale",
            help="Memories in the big tenant at a scale point (repeatable); "
            "default 10,000 and 100,000.",
        ),
    ] = None,
    queries: Annotated[
        int, typer.Option(help="Recall calls timed at each point (after 20 warm-up calls).")
    ] = 200,
    accuracy_queries: Annotated[
        int, typer.Option(help="Recall calls compared with an exact scan for recall@10.")
    ] = 100,
    remember: Annotated[
        int, typer.Option(help="Memories written through pgmem.remember_many at each point.")
    ] = 5_000,
    batch: Annotated[int, typer.Option(help="Memories per remember_many call.")] = 500,
    database: Annotated[
        str, typer.Option(help="Database the benchmark creates (and drops) at each point.")
    ] = "pgmem_bench",
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the last point's database for inspection.")
    ] = False,
    maintenance: Annotated[
        bool,
        typer.Option(
            "--maintenance/--no-maintenance",
            help="Run the decay + archive passes (the first pass at 1M takes the longest).",
        ),
    ] = True,
    on_citus: Annotated[
        bool,
        typer.Option(
            "--citus",
            help="Compare the Citus coordinator (its pgmem database, 1,000 tenants) with one "
            "plain database on the same server: correctness, bytes/memory, recall latency, "
            "routing (docs/scaling.md).",
        ),
    ] = False,
    citus_tenants: Annotated[int, typer.Option(help="Tenants for --citus.")] = 1_000,
    citus_per_tenant: Annotated[int, typer.Option(help="Memories per tenant for --citus.")] = 100,
    data: Annotated[
        str,
        typer.Option(
            help="Data source: synthetic (generated in SQL) or locomo (LoCoMo turns and "
            "questions, embedded once with the local MiniLM, beside a plain pgvector baseline).",
        ),
    ] = "synthetic",
    data_path: Annotated[
        Path, typer.Option(help="--data locomo: the LoCoMo JSON file.")
    ] = bench_real.DEFAULT_DATA,
    singles: Annotated[
        int, typer.Option(help="--data locomo: single writes timed, one per transaction.")
    ] = 200,
    clients: Annotated[
        int, typer.Option(help="--data locomo: concurrent clients of the 70/30 search/write mix.")
    ] = 16,
    mix_ops: Annotated[
        int, typer.Option(help="--data locomo: operations per client in the mix.")
    ] = 50,
    as_json: JsonOption = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the table as Markdown (docs/benchmarks.md).")
    ] = False,
    layers: Annotated[
        bool,
        typer.Option(
            "--layers",
            help="Benchmark short-term and working memory instead: appends, window + summary "
            "+ task reads, prompt vs recall (docs/benchmarks.md).",
        ),
    ] = False,
    messages: Annotated[
        int, typer.Option(help="--layers: stored session turns (the target scale: 1,000,000).")
    ] = layers_bench.DEFAULT_MESSAGES,
    sessions: Annotated[
        int, typer.Option(help="--layers: sessions holding them (the target scale: 10,000).")
    ] = layers_bench.DEFAULT_SESSIONS,
    store: Annotated[
        bool,
        typer.Option(
            "--store",
            help="Benchmark the LangGraph store instead: LangGraph's 6,000-op threaded and "
            "60,000-op async workloads on PgmemStore beside its PostgresStore, as ratios.",
        ),
    ] = False,
) -> None:
    """Benchmark recall latency, quality and throughput at scale.

    Generates synthetic memories (clustered 384-d vectors and text) at each scale
    point, measures recall latency (server-side), recall@10 against an exact scan,
    remember throughput, one decay + archive pass and size per memory, and prints a
    table. ``--data locomo`` measures real conversation text instead, with a plain
    pgvector table as the baseline in the same run, every figure beside its ratio.
    Needs a superuser DSN: it creates its own database."""
    if data not in ("synthetic", "locomo"):
        raise fail(f"--data {data}: use synthetic or locomo")
    if on_citus:
        _bench_citus(dsn, citus_tenants, citus_per_tenant, queries, as_json)
        return
    if scale and full:
        raise fail("--scale and --full are exclusive: list the points with --scale")
    scales = tuple(scale) if scale else benchmark.FULL_SCALES if full else benchmark.DEFAULT_SCALES
    if any(s < 1_000 for s in scales):
        raise fail("a scale point needs at least 1,000 memories (one subject)")
    server_dsn = dsn_for(dsn)

    if store:
        with steps(quiet=as_json) as progress:
            _bench_store(server_dsn, database, keep, as_json, markdown, progress)
        return

    if layers:
        with steps(quiet=as_json) as progress:
            _bench_layers(
                server_dsn, messages, sessions, queries, database, keep, as_json, markdown, progress
            )
        return

    if data == "locomo":
        options = {"singles": singles, "clients": clients, "mix_ops": mix_ops, "batch": batch}
        with steps(quiet=as_json) as progress:
            _bench_real(
                server_dsn,
                scales,
                data_path,
                queries,
                remember,
                database,
                keep,
                maintenance,
                options,
                as_json,
                markdown,
                progress,
            )
        return

    with database_errors(dsn), steps(quiet=as_json) as progress:
        try:
            info = benchmark.machine(server_dsn)
            results = benchmark.run(
                server_dsn,
                scales,
                queries=queries,
                accuracy_queries=accuracy_queries,
                remember=remember,
                batch=batch,
                database=database,
                keep=keep,
                maintenance=maintenance,
                progress=progress,
            )
        except benchmark.BenchError as exc:
            raise fail(str(exc)) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise fail(f"the benchmark needs a superuser DSN: {exc}") from None
    if as_json:
        json.dump(
            {"machine": info, "points": [r.as_dict() for r in results]},
            sys.stdout,
            default=str,
            indent=2,
        )
        sys.stdout.write("\n")
        return
    if markdown:
        sys.stdout.write(render_markdown(info, results))
        return
    console.print(_machine_line(info), highlight=False)
    console.print(_table(results))


def _bench_layers(
    server_dsn: str,
    messages: int,
    sessions: int,
    queries: int,
    database: str,
    keep: bool,
    as_json: bool,
    markdown: bool,
    progress: benchmark.Progress,
) -> None:
    with database_errors(server_dsn):
        try:
            info = benchmark.machine(server_dsn)
            result = layers_bench.run(
                server_dsn,
                messages=messages,
                sessions=sessions,
                queries=queries,
                database=f"{database}_layers",
                keep=keep,
                progress=progress,
            )
        except (benchmark.BenchError, ValueError) as exc:
            raise fail(str(exc)) from None
    if as_json:
        json.dump({"machine": info, "layers": result.as_dict()}, sys.stdout, default=str, indent=2)
        sys.stdout.write("\n")
    elif markdown:
        sys.stdout.write(f"Machine: {_machine_line(info)}\n\n{result.markdown()}")
    else:
        console.print(_machine_line(info), highlight=False)
        table = Table(title="pgmem bench --layers")
        table.add_column("")
        table.add_column("value", justify="right")
        for label, value in result.rows():
            table.add_row(label, value)
        console.print(table)


def _bench_store(
    server_dsn: str,
    database: str,
    keep: bool,
    as_json: bool,
    markdown: bool,
    progress: benchmark.Progress,
) -> None:
    with database_errors(server_dsn):
        try:
            info = benchmark.machine(server_dsn)
            result = store_bench.run(
                server_dsn, database=f"{database}_store", keep=keep, progress=progress
            )
        except benchmark.BenchError as exc:
            raise fail(str(exc)) from None
    if as_json:
        json.dump({"machine": info, "store": result.as_dict()}, sys.stdout, default=str, indent=2)
        sys.stdout.write("\n")
        return
    header = ("workload", "PgmemStore, s", "PostgresStore, s", "ratio", "target <= 3x")
    if markdown:
        lines = [f"Machine: {_machine_line(info)}", "", "| " + " | ".join(header) + " |"]
        lines.append("|---|" + "---:|" * (len(header) - 1))
        lines += ["| " + " | ".join(row) + " |" for row in result.rows()]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    console.print(_machine_line(info), highlight=False)
    table = Table(title="pgmem bench --store")
    for i, column in enumerate(header):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in result.rows():
        table.add_row(*row)
    console.print(table)


ROWS: list[tuple[str, str]] = [
    ("memories (all tenants)", "memories"),
    ("recall p50 / p95 / p99 ms (hybrid, k=10)", "recall"),
    ("  … without reinforcement", "recall_readonly"),
    ("  baseline: exact cosine top-10, p50 / p95 / p99 ms", "baseline_recall"),
    ("  pgmem / baseline, p50 / p95 / p99", "recall_ratio"),
    ("recall@10 vs exact scan", "recall_at_10"),
    ("remember, memories/s (remember_many)", "remember"),
    ("  baseline: multi-row INSERT, rows/s; pgmem / baseline", "baseline_remember"),
    ("decay + archive, first pass, s", "maintenance_first"),
    ("decay + archive, hourly pass, s", "maintenance_hourly"),
    ("table bytes / memory", "table"),
    ("index bytes / memory", "index"),
    ("  baseline bytes / row (table + index); pgmem / baseline", "baseline_bytes"),
    ("load / index build, s", "load"),
]


def _cell(result: benchmark.PointResult, key: str) -> str:
    r = result
    match key:
        case "memories":
            return f"{r.memories:,} ({r.tenants} tenants, {r.subjects:,} subjects)"
        case "recall":
            return f"{r.recall_ms.p50:.1f} / {r.recall_ms.p95:.1f} / {r.recall_ms.p99:.1f}"
        case "recall_readonly":
            m = r.recall_readonly_ms
            return f"{m.p50:.1f} / {m.p95:.1f} / {m.p99:.1f}"
        case "baseline_recall" | "recall_ratio" if r.baseline_search_ms is None:
            return "not run"
        case "baseline_recall":
            b = r.baseline_search_ms
            return f"{b.p50:.1f} / {b.p95:.1f} / {b.p99:.1f}"
        case "recall_ratio":
            ratios = r.ratios()
            return " / ".join(
                f"{ratios[k] or 0:.2f}" for k in ("recall_p50", "recall_p95", "recall_p99")
            )
        case "baseline_remember":
            return f"{r.baseline_insert_per_s:,.0f}; {r.ratios()['remember_per_s'] or 0:.3f}"
        case "baseline_bytes":
            return f"{r.baseline_bytes_per_memory:,.0f}; {r.ratios()['bytes_per_memory'] or 0:.2f}"
        case "recall_at_10":
            return f"{r.recall_at_10:.3f} ({r.recall_at_10_queries} queries)"
        case "remember":
            return f"{r.remember_per_s:,.0f} ({r.remembered:,})"
        case "maintenance_first" | "maintenance_hourly" if not r.maintenance_measured:
            return "not run"
        case "maintenance_first":
            return (
                f"{r.maintenance_first_s:.1f} ({r.decay_first_s:.1f} + {r.archive_first_s:.1f}; "
                f"{r.decayed_first:,} decayed, {r.archived_first:,} archived)"
            )
        case "maintenance_hourly":
            return (
                f"{r.maintenance_hourly_s:.1f} ({r.decayed_hourly:,} decayed, "
                f"{r.archived_hourly:,} archived)"
            )
        case "table":
            return f"{r.table_bytes_per_memory:,.0f}"
        case "index":
            return f"{r.index_bytes_per_memory:,.0f}"
        case "load":
            return f"{r.load_s:.0f} / {r.index_s:.0f}"
    raise KeyError(key)


def _table(results: list[benchmark.PointResult]) -> Table:
    table = Table(title="pgmem bench")
    table.add_column("")
    for r in results:
        table.add_column(f"{r.scale:,}", justify="right")
    for label, key in ROWS:
        table.add_row(label, *(_cell(r, key) for r in results))
    for target in results[0].targets() if results else {}:
        table.add_row(f"target: {target}", *(_verdict(r.targets()[target]) for r in results))
    return table


def _verdict(met: bool | None, *, emphasis: str = "") -> str:
    if met is None:
        return "not run"
    return "met" if met else f"{emphasis}NOT met{emphasis}"


def _machine_line(info: dict[str, object]) -> str:
    load = info.get("load_average")
    load_text = " ".join(f"{v:.1f}" for v in load) if isinstance(load, list | tuple) else load
    return (
        f"{info.get('nproc')} CPU ({info.get('cpu')}), {info.get('memory_gib')} GiB, "
        f"PostgreSQL {info.get('postgres')}, pgvector {info.get('pgvector')}, "
        f"shared_buffers {info.get('shared_buffers')}, load average {load_text}"
    )


def render_markdown(info: dict[str, object], results: list[benchmark.PointResult]) -> str:
    lines = [f"Machine: {_machine_line(info)}", ""]
    lines.append("| | " + " | ".join(f"{r.scale:,}" for r in results) + " |")
    lines.append("|---|" + "---:|" * len(results))
    for label, key in ROWS:
        lines.append(f"| {label.strip()} | " + " | ".join(_cell(r, key) for r in results) + " |")
    for target in results[0].targets() if results else {}:
        marks = " | ".join(_verdict(r.targets()[target], emphasis="**") for r in results)
        lines.append(f"| target: {target} | {marks} |")
    return "\n".join(lines) + "\n"


def _bench_real(
    server_dsn: str,
    scales: tuple[int, ...],
    data_path: Path,
    queries: int,
    remember: int,
    database: str,
    keep: bool,
    maintenance: bool,
    options: dict[str, int],
    as_json: bool,
    markdown: bool,
    progress: benchmark.Progress,
) -> None:
    with database_errors(server_dsn):
        try:
            info = benchmark.machine(server_dsn)
            progress(f"embedding the turns and questions of {data_path} (once for the run)")
            text = bench_real.RealText.load(data_path, LocalEmbedder())
            progress(
                f"{len(text.turns):,} unique turns, {len(text.probes):,} questions "
                f"embedded in {text.embed_s:.0f} s"
            )
            results = bench_real.run(
                server_dsn,
                scales,
                text,
                queries=queries,
                remember=remember,
                database=database,
                keep=keep,
                maintenance=maintenance,
                progress=progress,
                **options,
            )
        except (benchmark.BenchError, EmbeddingError) as exc:
            raise fail(str(exc)) from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise fail(f"the benchmark needs a superuser DSN: {exc}") from None
    if as_json:
        report = {
            "machine": info,
            "data": {
                "path": str(data_path),
                "turns": len(text.turns),
                "questions": len(text.probes),
                "embed_s": text.embed_s,
            },
            "points": [r.as_dict() for r in results],
        }
        json.dump(report, sys.stdout, default=str, indent=2)
        sys.stdout.write("\n")
        return
    if markdown:
        sys.stdout.write(render_real_markdown(info, results))
        return
    console.print(_machine_line(info), highlight=False)
    for r in results:
        table = Table(title=f"pgmem bench --data locomo: {r.scale:,} memories")
        for column in ("", "pgmem", "baseline (pgvector)", "pgmem / baseline"):
            table.add_column(column, justify="right" if column else "left")
        for row in real_rows(r):
            table.add_row(*row)
        for target, met in r.targets().items():
            table.add_row(f"target: {target}", _verdict(met), "", "")
        console.print(table)
        console.print(_real_notes(r), highlight=False)


def _latency(value: benchmark.Latency) -> str:
    return f"{value.p50:.2f} / {value.p95:.2f} / {value.p99:.2f}"


def real_rows(r: bench_real.RealPointResult) -> list[tuple[str, str, str, str]]:
    """Figure, pgmem, baseline, ratio: one row per paired measurement of a point."""
    p, b, ratio = r.pgmem, r.baseline, r.ratios()

    def x(key: str) -> str:
        value = ratio[key]
        return "-" if value is None else f"{value:.2f}"

    overhead = r.client_overhead_ms()
    return [
        (
            "recall p50 / p95 / p99, server-side (ms)",
            _latency(p.search_server_ms),
            _latency(b.search_server_ms),
            f"{x('search_server_p50')} / {x('search_server_p95')} / {x('search_server_p99')}",
        ),
        (
            "recall p50 / p95 / p99, client-side statement (ms)",
            _latency(p.search_client_ms),
            _latency(b.search_client_ms),
            f"{x('search_client_p50')} / {x('search_client_p95')} / {x('search_client_p99')}",
        ),
        ("Memory.search p50 / p95 / p99, pooled (ms)", _latency(r.memory_search_ms), "", ""),
        (
            "Memory.search p50 / p95 / p99, conn= per call (ms)",
            _latency(r.memory_search_conn_ms),
            "",
            "",
        ),
        (
            "client overhead p50: statement / pooled Memory / conn= (ms)",
            f"{overhead['statement']:.2f} / {overhead['memory_pooled']:.2f} / "
            f"{overhead['memory_conn_per_call_transaction']:.2f}",
            f"{overhead['baseline_statement']:.2f}",
            "",
        ),
        (
            f"mix {r.clients} clients 70/30 (ops/s)",
            f"{p.mix_per_s:,.0f}",
            f"{b.mix_per_s:,.0f}",
            x("mix_per_s"),
        ),
        (
            "batched writes (memories/s)",
            f"{p.insert_many_per_s:,.0f}",
            f"{b.insert_many_per_s:,.0f}",
            x("insert_many_per_s"),
        ),
        (
            "single write p50 / p95 (ms)",
            f"{p.insert_single_ms.p50:.2f} / {p.insert_single_ms.p95:.2f}",
            f"{b.insert_single_ms.p50:.2f} / {b.insert_single_ms.p95:.2f}",
            f"{x('insert_single_p50')} / {x('insert_single_p95')}",
        ),
        (
            "episodes, batched (stated turns/s)",
            f"{p.episode_many_per_s:,.0f}",
            f"{b.episode_many_per_s:,.0f}",
            x("episode_many_per_s"),
        ),
        (
            "their links afterwards (stated turns/s, pgmem.link_episodes)",
            f"{r.episodes_linked_per_s:,.0f}",
            "",
            "",
        ),
        (
            "one episode p50 / p95, server-side (ms)",
            f"{p.episode_single_ms.p50:.2f} / {p.episode_single_ms.p95:.2f}",
            f"{b.episode_single_ms.p50:.2f} / {b.episode_single_ms.p95:.2f}",
            x("episode_single_p50"),
        ),
        (
            "bytes / memory (table + indexes + decay)",
            f"{p.bytes_per_memory:,.0f}",
            f"{b.bytes_per_memory:,.0f}",
            x("bytes_per_memory"),
        ),
    ]


def _real_notes(r: bench_real.RealPointResult) -> str:
    actions = ", ".join(f"{n:,} {a}" for a, n in sorted(r.remember_actions.items()))
    episodes = ", ".join(f"{n:,} {a}" for a, n in sorted(r.episode_actions.items()))
    decay = (
        f"decay first pass {r.decay_first_s:.1f} s ({r.decayed_first:,} rows) + archive "
        f"{r.archive_first_s:.1f} s; hourly {r.decay_hourly_s:.2f} s ({r.decayed_hourly:,}) + "
        f"archive {r.archive_hourly_s:.2f} s, after a VACUUM of {r.vacuum_s:.1f} s (before it: "
        f"{r.decay_unvacuumed_s:.2f} s)"
        if r.maintenance_measured
        else "decay not run"
    )
    before = " ".join(f"{v:.1f}" for v in r.load_before)
    after = " ".join(f"{v:.1f}" for v in r.load_after)
    return (
        f"{r.memories:,} memories in {r.subjects:,} subjects of {r.per_subject:,}; "
        f"table {r.table_bytes_per_memory:,.0f} + indexes "
        f"{r.index_bytes_per_memory:,.0f} + memory_decay {r.decay_bytes_per_memory:,.0f} B/memory; "
        f"events {r.event_bytes_per_event:,.0f} B/event ({r.event_bytes_per_memory:,.0f} "
        f"B/memory), inbox {r.inbox_bytes:,} B; remember_many: {actions}; episodes: {episodes}; "
        f"{decay}; "
        f"load {r.load_s:.0f} s + indexes {r.index_s:.0f} s; load average {before} -> {after}"
    )


def render_real_markdown(info: dict[str, object], results: list[bench_real.RealPointResult]) -> str:
    lines = [f"Machine: {_machine_line(info)}", ""]
    for r in results:
        lines += [
            f"**{r.scale:,} memories** (LoCoMo turns, subjects of {r.per_subject:,}; "
            f"vectors of {r.embedding_model})",
            "",
            "| | pgmem | baseline (pgvector) | pgmem / baseline |",
            "|---|---:|---:|---:|",
        ]
        lines += [f"| {' | '.join(row)} |" for row in real_rows(r)]
        for target, met in r.targets().items():
            lines.append(f"| target: {target} | {_verdict(met, emphasis='**')} | | |")
        lines += ["", _real_notes(r), ""]
    return "\n".join(lines)


def _bench_citus(
    dsn: str | None, tenants: int, per_tenant: int, queries: int, as_json: bool
) -> None:
    coordinator = dsn_for(dsn)
    with database_errors(dsn), steps(quiet=as_json) as progress:
        if not citus.has_citus(coordinator):
            raise fail(
                "--citus needs a Citus coordinator: `pgmem db start --citus 2`, `pgmem migrate`"
            )
        result = citus_bench.run(
            coordinator,
            tenants=tenants,
            per_tenant=per_tenant,
            queries=queries,
            say=progress,
        )
    if as_json:
        json.dump(asdict(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    table = Table(
        title=f"{result.memories:,} memories, {result.tenants:,} tenants, {result.workers} workers"
    )
    for column in ("", "Citus (coordinator)", "single server", "ratio"):
        table.add_column(column)
    rows = [
        ("load (s)", result.load_s["citus"], result.load_s["single"]),
        ("bytes / memory", result.bytes_per_memory["citus"], result.bytes_per_memory["single"]),
        *(
            (f"recall {key} (ms)", result.recall_ms["citus"][key], result.recall_ms["single"][key])
            for key in ("p50", "p95", "mean")
        ),
    ]
    for label, on_citus, single in rows:
        ratio = f"{on_citus / single:.2f}" if single else "-"
        table.add_row(label, f"{on_citus:,.1f}", f"{single:,.1f}", ratio)
    console.print(table)
    console.print(f"correctness: {result.correctness}", highlight=False)
    console.print(
        f"routing of one tenant ({result.tenant_node}):\n{result.explain}", highlight=False
    )
