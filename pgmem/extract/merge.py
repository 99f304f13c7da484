"""Merge two near-duplicate facts into one statement (the worker's side of
``pgmem.remember`` answering "near-duplicate, merge them").

With an LLM the model writes the merged statement. Without one, or when its answer is
unusable, the more specific fact is kept whole — rewriting text without a model would
risk garbling it. "More specific" is decided, in order, by:

1. specifics: runs of digits plus name-like tokens (Latin words starting with a
   capital letter, other than the first word and "User"/"I"), since numbers, dates and
   names are what a vaguer phrasing loses;
2. tokens: Latin words and digit runs, plus each CJK character (Chinese has no spaces);
3. length in characters.

A full tie keeps ``a``, the fact already stored, so a merge never churns a row for
nothing.
"""

# Chinese text and curly quotes appear on purpose.

from __future__ import annotations

import logging
import re

from pgmem.extract.llm import LLMError, LLMExtractor
from pgmem.extract.safety import looks_like_injection

__all__ = ["merge_facts", "more_specific", "specificity"]

log = logging.getLogger(__name__)

_DIGITS_RE = re.compile(r"\d+")
_LATIN_WORD_RE = re.compile(r"[A-Za-z][\w'’-]*")
_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w'’-]*|[\u3400-\u9fff\uf900-\ufaff]")
_NOT_NAMES = frozenset({"User", "I", "The", "A", "An"})


def specificity(text: str) -> tuple[int, int, int]:
    """(specifics, tokens, characters) of a fact; compare tuples, larger is more specific."""
    words = _LATIN_WORD_RE.findall(text)
    names = sum(1 for word in words[1:] if word[:1].isupper() and word not in _NOT_NAMES)
    specifics = len(_DIGITS_RE.findall(text)) + names
    return (specifics, len(_TOKEN_RE.findall(text)), len(text.strip()))


def more_specific(a: str, b: str) -> str:
    return b if specificity(b) > specificity(a) else a


def merge_facts(a: str, b: str, llm: LLMExtractor | None = None) -> str:
    """One statement for two near-duplicate facts; ``a`` is the stored one, ``b`` the new."""
    if llm is not None:
        try:
            merged = llm.merge(a, b)
        except LLMError as exc:
            log.warning("LLM merge failed, keeping the more specific fact: %s", exc)
        else:
            if not looks_like_injection(merged):
                return merged
            log.warning("LLM merge looked like prompt injection, keeping the more specific fact")
    return more_specific(a, b)
