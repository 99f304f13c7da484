"""Prompt-injection pre-filter: text that tries to steer an agent is never remembered.

A memory store is a second way into every future prompt, so "ignore previous
instructions…" stored as a fact would be replayed to the agent later. Messages that
look like that are refused before extraction (and kept out of any LLM prompt) and
handed back as rejected items.

The rules are not written here: ``pgmem.safety_rules()`` in SQL is their only
source, and :data:`RULES_FILE` is its export (``pgmem eval safety --export-rules``
writes it). This module runs the same folds, views and patterns the way
``pgmem._detect_injection_many`` does, so that extraction can refuse a message
without a database round trip; ``tests/test_safety_corpus.py`` checks that the export
is current and that both give the same verdict, rule name included, on every case of
the safety corpus.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import unicodedata
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

__all__ = [
    "CJK",
    "INJECTION_PATTERNS",
    "RULES_FILE",
    "injection_reason",
    "load_rules",
    "looks_like_injection",
    "normalize_for_safety",
]

RULES_FILE: Final = Path(__file__).with_name("safety_rules.json")

# The base64 runs pgmem._detect_injection_many decodes (same pattern there).
_BASE64_RUN: Final = re.compile(r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{16,})=*")
# When it also reads the percent-decoded, ROT13, reversed and word-reversed text (same
# tests there).
_PERCENT: Final = re.compile(r"%[0-9A-Fa-f]{2}")
_LATIN: Final = re.compile(r"[A-Za-z]")
# Kana, hanzi and hangul, the class the SQL safety functions use (the probe's length
# gate, pgmem._probe_length, counts these).
CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


@dataclass(frozen=True)
class _Fold:
    translate: dict[int, str] | None
    pattern: re.Pattern[str] | None
    replacement: str
    count: int  # 0 = every match (flag 'g'), 1 = the first only, as regexp_replace

    def apply(self, text: str) -> str:
        if self.translate is not None:
            return text.translate(self.translate)
        assert self.pattern is not None
        return self.pattern.sub(self.replacement, text, count=self.count)


@dataclass(frozen=True)
class _Rules:
    prefilter: re.Pattern[str]
    decoded: re.Pattern[str]  # what a ROT13 or reversed view must hold to be read
    folds: dict[str, tuple[_Fold, ...]]  # by view: stored, injection, loose, rot13
    injection: tuple[tuple[str, re.Pattern[str]], ...]


def _compile(pattern: str, flags: str) -> re.Pattern[str]:
    # PostgreSQL's '.' matches a newline (no newline-sensitive mode), hence DOTALL.
    return re.compile(pattern, (re.IGNORECASE if "i" in flags else 0) | re.DOTALL)


def _fold(row: dict[str, Any]) -> _Fold:
    if row["flags"] == "translate":
        source, target = row["pattern"], row["replacement"]
        # translate(): characters without a counterpart are deleted.
        table = {ord(c): (target[i] if i < len(target) else "") for i, c in enumerate(source)}
        return _Fold(table, None, "", 0)
    return _Fold(
        None,
        _compile(row["pattern"], row["flags"]),
        row["replacement"],
        0 if "g" in row["flags"] else 1,
    )


@cache
def load_rules(path: Path = RULES_FILE) -> _Rules:
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    rows.sort(key=lambda r: r["rule_order"])
    prefilter = next(r for r in rows if r["category"] == "prefilter" and r["kind"] == "injection")
    decoded = next(r for r in rows if r["category"] == "prefilter" and r["kind"] == "decoded")
    folds = {
        view: tuple(_fold(r) for r in rows if r["category"] == "fold" and r["kind"] == view)
        for view in ("stored", "injection", "loose", "rot13")
    }
    injection = tuple(
        (r["rule"], _compile(r["pattern"], r["flags"]))
        for r in rows
        if r["category"] == "injection"
    )
    return _Rules(
        _compile(prefilter["pattern"], prefilter["flags"]),
        _compile(decoded["pattern"], decoded["flags"]),
        folds,
        injection,
    )


def _apply(folds: Sequence[_Fold], text: str) -> str:
    for fold in folds:
        text = fold.apply(text)
    return text


def _decoded(run: str) -> str | None:
    if len(run) % 4 == 1:
        return None
    try:
        text = base64.b64decode(run + "=" * ((4 - len(run) % 4) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    # PostgreSQL text cannot hold NUL: convert_from fails, the run is skipped there.
    return None if "\x00" in text else text


def _percent_decoded(text: str) -> str | None:
    try:
        return urllib.parse.unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _views(text: str, rules: _Rules) -> list[str]:
    stored = _apply(rules.folds["stored"], text)
    sources = [stored]
    for match in _BASE64_RUN.finditer(stored):
        decoded = _decoded(match.group(1))
        if decoded is not None:
            sources.append(_apply(rules.folds["stored"], decoded))
    # The reversible transforms pgmem._detect_injection_many undoes, in its order.
    if _PERCENT.search(stored):
        decoded = _percent_decoded(stored)
        if decoded is not None and "\x00" not in decoded:
            sources.append(_apply(rules.folds["stored"], decoded))
    if _LATIN.search(stored):
        rotated = _apply(rules.folds["rot13"], stored)
        if rules.decoded.search(rotated):
            sources.append(rotated)
        if not CJK.search(stored):
            if rules.decoded.search(stored[::-1]):
                sources.append(stored[::-1])
            # Each word reversed in its place, split on the space alone as there.
            if " " in stored:
                words = " ".join(w[::-1] for w in stored.split(" "))
                if rules.decoded.search(words):
                    sources.append(words)
    views: list[str] = []
    for source in sources:
        view = _apply(rules.folds["injection"], unicodedata.normalize("NFKC", source))
        views += [view, _apply(rules.folds["loose"], view)]
    return [v for v in views if rules.prefilter.search(v)]


def normalize_for_safety(text: str) -> str:
    """The text as pgmem stores it: invisible characters removed, full-width forms folded."""
    return _apply(load_rules().folds["stored"], text)


def injection_reason(text: str) -> str | None:
    """The first injection rule the text matches, or None (as pgmem.detect_injection)."""
    rules = load_rules()
    views = _views(text, rules)
    for name, pattern in rules.injection:
        if any(pattern.search(view) for view in views):
            return name
    return None


def looks_like_injection(text: str) -> bool:
    return injection_reason(text) is not None


# (name, pattern) of every injection rule, in the order they are tried.
INJECTION_PATTERNS: Final[tuple[tuple[str, str], ...]] = tuple(
    (name, pattern.pattern) for name, pattern in load_rules().injection
)
