"""`pgmem eval safety`: how well the SQL safety rules hold on the safety corpus.

Two corpora of one format: the development corpus (``pgmem/safety_corpus.jsonl``),
which the rules are written against, and the frozen half
(``pgmem/safety_corpus_frozen.jsonl``), written apart from the rules and never tuned
on, which says how they hold on text they were not written for. One JSON object a
line, in English, Chinese, German, French, Spanish and Japanese, of four sets:

* ``pii``: a text with one secret or piece of personal data (``secret``) of a class
  (phone, email, id_card, bank_card, iban, password, pin, api_key, token, private_key,
  address, ssn, passport). Caught when ``pgmem._redact_many`` changed the text and
  the secret no longer appears in it (neither as written nor folded);
* ``injection``: a prompt injection of a technique (direct, paraphrase, role, zero
  width, homoglyph, leetspeak, base64, traditional Chinese…). Caught when
  ``pgmem._detect_injection_many`` names a rule;
* ``benign_pii`` and ``benign_injection``: harmless look-alikes (GPS coordinates,
  git SHAs, "developer mode on my Android phone", 我的手机越狱了…).

A redaction false positive is a text without personal data (the two benign sets)
that redaction changes beyond folding; an injection false positive is any text
that is not an injection (every other set) that detection rejects. The verdicts
come from the database: this module only counts.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import psycopg

from pgmem.embed import Embedder
from pgmem.lab.eval import vector_text
from pgmem.queries.safety import SAFETY_RULES_EXPORT, SAFETY_VERDICTS

__all__ = [
    "CORPUS",
    "FROZEN",
    "HELDOUT",
    "TARGETS",
    "Case",
    "Rate",
    "SafetyReport",
    "export_rules",
    "load_corpus",
    "measure",
]

CORPUS: Final = Path(__file__).with_name("safety_corpus.jsonl")
# The held-out half: written by someone who had not read the rules or CORPUS, committed
# before its first measurement, and never edited since. Rules are tuned on CORPUS only.
FROZEN: Final = Path(__file__).with_name("safety_corpus_frozen.jsonl")
# A second held-out set of injections and look-alikes, written the same way for the
# injection probe: half of one writer's cases went into CORPUS, this half never did,
# and neither rules nor probe are trained on it.
HELDOUT: Final = Path(__file__).with_name("safety_corpus_heldout.jsonl")

# The targets: PII caught per class, injection caught, false positives.
TARGETS: Final = {"pii": 0.98, "injection": 0.90, "false_positive": 0.02}


@dataclass(frozen=True)
class Case:
    id: int
    set: str
    cls: str
    lang: str
    text: str
    secret: str | None = None


@dataclass
class Rate:
    name: str
    total: int = 0
    hits: int = 0
    misses: list[Case] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else 0.0


@dataclass
class SafetyReport:
    pii: list[Rate]
    injection: list[Rate]
    redaction_fp: Rate
    injection_fp: Rate

    @property
    def injection_total(self) -> Rate:
        total = Rate("all")
        for rate in self.injection:
            total.total += rate.total
            total.hits += rate.hits
            total.misses.extend(rate.misses)
        return total

    def failures(self) -> list[str]:
        """Every target the corpus does not meet, in words (empty when all are met)."""
        out = [
            f"pii {r.name}: {r.rate:.1%} < {TARGETS['pii']:.0%}"
            for r in self.pii
            if r.rate < TARGETS["pii"]
        ]
        total = self.injection_total
        if total.rate < TARGETS["injection"]:
            out.append(f"injection: {total.rate:.1%} < {TARGETS['injection']:.0%}")
        for fp in (self.redaction_fp, self.injection_fp):
            if fp.rate > TARGETS["false_positive"]:
                out.append(f"{fp.name}: {fp.rate:.1%} > {TARGETS['false_positive']:.0%}")
        return out

    def as_dict(self) -> dict[str, Any]:
        def rate(r: Rate) -> dict[str, Any]:
            return {
                "total": r.total,
                "hits": r.hits,
                "rate": round(r.rate, 4),
                "misses": [c.text for c in r.misses],
            }

        return {
            "pii": {r.name: rate(r) for r in self.pii},
            "injection": {r.name: rate(r) for r in self.injection},
            "injection_all": rate(self.injection_total),
            "redaction_false_positives": rate(self.redaction_fp),
            "injection_false_positives": rate(self.injection_fp),
            "targets": TARGETS,
            "failures": self.failures(),
        }


def load_corpus(path: Path | str = CORPUS) -> list[Case]:
    cases: list[Case] = []
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                raw = json.loads(line)
                cases.append(
                    Case(
                        id=raw["id"],
                        set=raw["set"],
                        cls=raw["class"],
                        lang=raw["lang"],
                        text=raw["text"],
                        secret=raw.get("secret"),
                    )
                )
    return cases


def measure(
    conn: psycopg.Connection[Any],
    cases: list[Case] | None = None,
    embedder: Embedder | None = None,
) -> SafetyReport:
    """Run every case through pgmem's redaction and injection detection and count; with
    an ``embedder``, each case's embedding goes to that model's injection probe too, as
    on the write path (none for a model without a probe)."""
    cases = load_corpus() if cases is None else cases
    texts = [c.text for c in cases]
    vectors = None if embedder is None else embedder.embed(texts)
    rows = conn.execute(
        SAFETY_VERDICTS,
        {
            "texts": texts,
            "secrets": [c.secret for c in cases],
            "embeddings": None if vectors is None else [vector_text(v) for v in vectors],
            "model": None if embedder is None else embedder.model,
        },
    ).fetchall()
    pii: dict[str, Rate] = defaultdict(lambda: Rate(""))
    injection: dict[str, Rate] = defaultdict(lambda: Rate(""))
    redaction_fp = Rate("redaction false positives")
    injection_fp = Rate("injection false positives")
    for case, (_, rule, redacted, _kinds, cleaned, cleaned_secret) in zip(cases, rows, strict=True):
        if case.set == "pii":
            assert case.secret is not None, case
            rate = pii[case.cls]
            rate.name = case.cls
            rate.total += 1
            caught = (
                redacted != cleaned
                and case.secret not in redacted
                and cleaned_secret not in redacted
            )
            rate.hits += caught
            if not caught:
                rate.misses.append(case)
        if case.set == "injection":
            rate = injection[case.cls]
            rate.name = case.cls
            rate.total += 1
            rate.hits += rule is not None
            if rule is None:
                rate.misses.append(case)
        else:
            injection_fp.total += 1
            if rule is not None:
                injection_fp.hits += 1
                injection_fp.misses.append(case)
        if case.set in ("benign_pii", "benign_injection"):
            redaction_fp.total += 1
            if redacted != cleaned:
                redaction_fp.hits += 1
                redaction_fp.misses.append(case)
    return SafetyReport(
        pii=sorted(pii.values(), key=lambda r: r.name),
        injection=sorted(injection.values(), key=lambda r: r.name),
        redaction_fp=redaction_fp,
        injection_fp=injection_fp,
    )


def export_rules(conn: psycopg.Connection[Any]) -> str:
    """pgmem.safety_rules() as the JSON the Python pre-filter reads (extract/safety_rules.json)."""
    cursor = conn.execute(SAFETY_RULES_EXPORT)
    names = [column.name for column in cursor.description or ()]
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return json.dumps(rows, ensure_ascii=False, indent=1) + "\n"
