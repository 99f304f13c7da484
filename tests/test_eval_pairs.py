"""`pgmem eval pairs`: the write decisions on the labelled pair corpus.

Real database, the bag-of-words embedder of tests/test_eval.py (a model pgmem has no
thresholds for: 0.95 / 0.85), and the shipped corpus for its shape.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row
from test_eval import WordHashEmbedder

from pgmem.lab import eval as ev
from pgmem.lab import pairs as P


def _pair(n: int, a: str, b: str, label: str, split: str = "dev") -> P.Pair:
    return P.Pair(f"t-{n}", "en", a, b, label, "test", split)


def test_the_shipped_corpus_is_balanced_and_split_in_halves() -> None:
    pairs = P.load_pairs()
    assert len(pairs) >= 600
    assert {p.lang for p in pairs} == {"en", "zh"}
    assert set(Counter(p.label for p in pairs)) == set(P.LABELS)
    halves = Counter(p.split for p in pairs)
    assert abs(halves["dev"] - halves["test"]) <= len(pairs) // 10
    assert len({p.id for p in pairs}) == len(pairs)


def test_a_malformed_corpus_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    good = {"id": "x", "lang": "en", "a": "A", "b": "B", "label": "merge", "category": "c"}
    lines = [json.dumps({**good, "split": "dev"}), json.dumps({**good, "split": "x"})]
    path.write_text("\n".join(lines))
    with pytest.raises(ev.EvalError, match=r":2: label must be one of"):
        P.load_pairs(path)
    path.write_text('{"id": "x"}\n')
    with pytest.raises(ev.EvalError, match=r":1: not a pair"):
        P.load_pairs(path)


def test_scores_count_precision_by_decision_and_recall_by_label() -> None:
    pairs = [
        _pair(1, "a", "b", "duplicate"),
        _pair(2, "a", "b", "duplicate"),
        _pair(3, "a", "b", "keep_both"),
        _pair(4, "a", "b", "supersede"),
    ]
    s = P.scores(pairs, ["duplicate", "keep_both", "duplicate", "supersede"])
    assert s.correct == 2 and s.pairs == 4
    assert s.precision("duplicate") == 0.5  # one of the two duplicates was two facts
    assert s.recall("duplicate") == 0.5
    assert s.precision("supersede") == s.recall("supersede") == 1.0
    assert s.precision("merge") is None and s.recall("merge") is None


def test_decisions_follow_the_evidence_and_the_replay_matches_the_write(dsn: str) -> None:
    pairs = [
        _pair(1, "I live in Berlin", "i live in berlin!", "duplicate"),
        _pair(2, "I like tea", "I like coffee", "keep_both"),
        _pair(3, "I live in Berlin", "I live in Paris", "supersede"),
        # Nearly the same words, one more: never a duplicate, whatever the cosine.
        _pair(4, "Alice owns a red kayak", "Alice owns a red kayak and a canoe", "merge"),
        _pair(5, "Alice owns a kayak and a canoe", "Alice owns a kayak", "duplicate", "test"),
    ]
    result = P.evaluate_model(dsn, pairs, WordHashEmbedder(), say=lambda _m: None)
    decided = {e["id"]: e["decision"] for e in result.errors}
    assert result.thresholds == (0.95, 0.85)  # a model pgmem has not measured
    assert decided.get("t-1", "duplicate") == "duplicate"
    assert decided.get("t-2", "keep_both") == "keep_both"
    assert decided.get("t-3", "supersede") == "supersede"
    assert decided.get("t-4") in (None, "keep_both")  # merge, or kept apart: never lost
    assert result.shipped["dev"].precision("duplicate") == 1.0


def test_the_replay_at_a_point_decides_as_remember_did_there(dsn: str) -> None:
    pairs = [
        _pair(1, "Alice owns a red kayak", "Alice owns a red kayak and a canoe", "merge"),
        _pair(2, "Alice owns a red kayak and a canoe", "Alice owns a red kayak", "duplicate"),
        _pair(3, "Bob plays chess on Sundays", "Bob plays chess", "duplicate"),
        _pair(4, "I like tea", "I like coffee", "keep_both"),
    ]
    tenant = "pairs-replay"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("select pgmem.create_tenant(%s)", (tenant,))
        # Low thresholds, so similarity lets the evidence decide every pair.
        ev.set_tenant_settings(admin, tenant, {"duplicate_threshold": 0.6, "merge_threshold": 0.6})
    with ev.tenant_connection(dsn, tenant) as conn:
        outcomes = P.store_pairs(conn, pairs, WordHashEmbedder())
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as owner:
        grid = P.replay(owner, tenant, outcomes)
    written = [P.DECISIONS[o.action] for o in outcomes]
    assert grid[(0.6, 0.6)] == written
    assert written == ["merge", "duplicate", "duplicate", "keep_both"]
    # Above every similarity, nothing is a duplicate or a merge but the exact re-send.
    assert grid[(0.99, 0.99)] == ["keep_both", "keep_both", "keep_both", "keep_both"]
