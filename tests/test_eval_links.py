"""`pgmem eval locomo --links write` and `pgmem eval consolidation` on the small LoCoMo
sample of tests/test_eval.py (real database, bag-of-words embedder)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from test_eval import WordHashEmbedder, locomo_file, service  # noqa: F401  (fixtures)
from typer.testing import CliRunner

from pgmem.cli.app import app
from pgmem.lab import consolidation_eval as ce
from pgmem.lab import eval as ev


def test_ingest_can_make_the_write_paths_links(
    service: psycopg.Connection[dict[str, Any]],  # noqa: F811
    locomo_file: Path,  # noqa: F811
) -> None:
    [conv] = ev.load_locomo(locomo_file)
    stats = ev.ingest(service, [conv], WordHashEmbedder(), links="write")
    rows = service.execute(
        """
        select f.session_id = t.session_id as same, l.link_type, l.weight
        from pgmem.memory_links as l
        join pgmem.memories as f on f.memory_id = l.from_id
        join pgmem.memories as t on t.memory_id = l.to_id
        """
    ).fetchall()
    assert rows and len(rows) == stats.links
    # Only within a session (no triples here: no same_entity), weighted by similarity.
    assert {(r["same"], r["link_type"]) for r in rows} == {(True, "same_session")}
    assert all(0 < r["weight"] <= 1 for r in rows)
    per_memory = service.execute(
        """
        select max(n) as most from (
            select m.memory_id, count(l.*) as n from pgmem.memories as m
            join pgmem.memory_links as l on m.memory_id in (l.from_id, l.to_id)
            group by m.memory_id) as c
        """
    ).fetchone()
    assert per_memory is not None and per_memory["most"] <= 8  # max_links_per_memory


def test_evaluate_reports_where_its_links_came_from(dsn: str, locomo_file: Path) -> None:  # noqa: F811
    conversations = ev.load_locomo(locomo_file)
    report = ev.evaluate(
        dsn, conversations, WordHashEmbedder(), modes=["hybrid-ripple"], links="write"
    )
    assert report.links_from == "write" and report.as_dict()["links_from"] == "write"
    assert report.settings["ripple_limit"] == 3
    with pytest.raises(ev.EvalError, match="unknown link source"):
        ev.evaluate(dsn, conversations, WordHashEmbedder(), links="random")


def test_consolidation_eval_measures_compression_and_retained_recall(
    dsn: str,
    locomo_file: Path,  # noqa: F811
) -> None:
    conversations = ev.load_locomo(locomo_file)
    # The filler turns are alike only by their shared words; a low bar clusters them.
    report = ce.evaluate_consolidation(
        dsn,
        conversations,
        WordHashEmbedder(),
        settings={"consolidate_similarity": 0.3},
        path=str(locomo_file),
    )
    assert report.method == "extractive" and report.insights > 0
    assert report.before == 36
    # Archived sources leave, one insight per cluster comes in.
    assert report.after == report.before - report.sources + report.insights
    assert report.compression < 1
    with psycopg.connect(dsn) as conn:
        # Every memory an insight lives in answers for its sources' turns.
        uncredited = conn.execute(
            "select count(*) from pgmem.memories as m"
            " where exists (select from pgmem.memory_links as l"
            "               where l.from_id = m.memory_id and l.link_type = 'derived_from')"
            "   and jsonb_array_length(m.metadata -> 'dia_ids') < 2"
        ).fetchone()
        archived = conn.execute(
            "select count(*) from pgmem.memories where status = 'archived'"
        ).fetchone()
    assert uncredited == (0,) and archived == (report.sources,)
    data = report.as_dict()
    assert data["settings"]["consolidate_sources"] == "archive"
    assert set(data["retained"]) == {"R@5", "R@10"}
    assert data["recall_before"]["overall"].keys() == {"R@5", "R@10"}


def test_cli_consolidation_prints_json_and_a_table(
    server_dsn: str,
    locomo_file: Path,  # noqa: F811
) -> None:
    runner = CliRunner()
    name = f"pgmem_eval_test_{uuid.uuid4().hex[:8]}"
    # No LLM configured: the report must say the insights are extractive.
    env = {"PGMEM_EMBEDDER": "local", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    args = ["eval", "consolidation", str(locomo_file), "--dsn", server_dsn, "--database", name]
    result = runner.invoke(app, [*args, "--json", "--set", "consolidate_similarity=0.3"], env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["active_before"] == 36 and data["method"] == "extractive"
    assert data["compression"] == pytest.approx(data["active_after"] / 36, abs=1e-4)
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert "R@5 retained" in result.stdout and "consolidate_sources=archive" in result.stdout
