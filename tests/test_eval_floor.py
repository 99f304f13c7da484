"""`pgmem eval floor`: what the relevance floor does to on-topic and off-topic prompts,
on each conversation's dev and frozen half of questions."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_eval import WordHashEmbedder, locomo_sample
from typer.testing import CliRunner

from pgmem.cli.app import app
from pgmem.lab import eval as ev
from pgmem.lab import floor as floor_eval


def _unrelated(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample as another conversation whose turns and questions share no word with
    the sample's: each is off-topic for the other."""
    other = copy.deepcopy(sample)
    other["sample_id"] = "conv-t2"
    for n, qa in enumerate(other["qa"]):
        qa["question"] = f"which zebra xylophone quartz {n}?"
    for key, turns in other["conversation"].items():
        if isinstance(turns, list):
            for n, turn in enumerate(turns):
                turn["text"] = f"zebra xylophone quartz {key} {n}"
                turn.pop("blip_caption", None)
    return other


@pytest.fixture
def two_conversations(tmp_path: Path) -> Path:
    sample = locomo_sample()[0]
    path = tmp_path / "two.json"
    path.write_text(json.dumps([sample, _unrelated(sample)]))
    return path


def test_the_floor_empties_off_topic_prompts_and_keeps_on_topic_answers(
    server_dsn: str, two_conversations: Path
) -> None:
    report = floor_eval.run_floor(
        server_dsn,
        two_conversations,
        WordHashEmbedder(),
        database=f"pgmem_eval_floor_{uuid.uuid4().hex[:8]}",
        min_similarity=0.3,
        relative_floor=0,  # the absolute floor alone: what it does not take away
    )
    conversations = ev.load_locomo(two_conversations)
    asked = sum(len(ev.evaluated_questions(c)) for c in conversations)
    assert [h.half for h in report.halves] == ["dev", "test"]
    assert sum(h.questions for h in report.halves) == asked
    assert report.min_similarity == 0.3 and report.min_text_match == 0.2
    for half in report.halves:
        if not half.questions:
            continue
        # No floor: another conversation's memories fill every off-topic prompt.
        assert half.off.off_any == 1.0 and half.off.off_lines > 0
        # The floor: nothing of theirs answers questions that share none of their words.
        assert half.on.off_any == 0.0 and half.on.off_lines == 0
        # On-topic, the floor only takes rows away that did not answer.
        assert half.on.noise_lines <= half.off.noise_lines
        assert half.on.recall_at_10 >= half.off.recall_at_10 - 1e-9
        # Both speakers' profile facts are in every context block, on- and off-topic.
        assert half.off.profile_prompts == half.on.profile_prompts == 1.0
    assert report.profile_facts == 2 * len(conversations)


def test_the_relative_floor_is_measured_on_top_of_the_absolute_one(
    server_dsn: str, tmp_path: Path
) -> None:
    sample = locomo_sample()[0]
    partial = _unrelated(sample)
    # Turns holding one, two or all three of the questions' words: each clears the
    # absolute text floor, and only the full matches come near the best one.
    words = ("zebra", "xylophone", "quartz")
    for key, turns in partial["conversation"].items():
        if isinstance(turns, list):
            for n, turn in enumerate(turns):
                turn["text"] = " ".join(words[: 1 + n % 3]) + f" {key} {n}"
    path = tmp_path / "partial.json"
    path.write_text(json.dumps([sample, partial]))
    reports = [
        floor_eval.run_floor(
            server_dsn,
            path,
            WordHashEmbedder(),
            database=f"pgmem_eval_floor_{uuid.uuid4().hex[:8]}",
            min_similarity=0.3,
            relative_floor=relative,
        )
        for relative in (0, 1)
    ]
    assert [r.relative_floor for r in reports] == [0, 1]
    absolute, strictest = ([h.on for h in r.halves if h.questions] for r in reports)
    for alone, raised in zip(absolute, strictest, strict=True):
        # Raising the floor towards the best candidate only takes rows away; at 1 only
        # the best candidates (by similarity or by text match) are left: the partial
        # matches go.
        assert raised.noise_lines < alone.noise_lines
        assert raised.recall_at_10 <= alone.recall_at_10
        assert raised.off_any == alone.off_any == 0.0
        assert raised.profile_prompts == 1.0


def test_one_conversation_cannot_be_asked_off_topic(server_dsn: str, tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(locomo_sample()))
    with pytest.raises(ev.EvalError, match="two conversations"):
        floor_eval.run_floor(
            server_dsn,
            path,
            WordHashEmbedder(),
            database=f"pgmem_eval_floor_{uuid.uuid4().hex[:8]}",
        )


def test_cli_reports_both_halves(server_dsn: str, two_conversations: Path) -> None:
    env = {"PGMEM_EMBEDDER": "minilm", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    args = ["eval", "floor", str(two_conversations), "--dsn", server_dsn]
    args += ["--database", f"pgmem_eval_floor_{uuid.uuid4().hex[:8]}"]
    result = CliRunner().invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # MiniLM's calibrated floor is the default.
    assert report["min_similarity"] == pytest.approx(0.42)
    assert [h["half"] for h in report["halves"]] == ["dev", "test"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert "off-topic: any memory" in result.stdout
