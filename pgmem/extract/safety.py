"""Prompt-injection pre-filter: text that tries to steer an agent is never remembered.

A memory store is a second way into every future prompt, so "ignore previous
instructions…" stored as a fact would be replayed to the agent later. Messages that
look like that are refused before extraction and handed back as rejected items.

:data:`INJECTION_PATTERNS` is the single table of patterns. The authoritative copy
lives in SQL (``pgmem`` checks the same patterns with ``~*``), so every pattern here
stays within what both Python ``re`` and PostgreSQL regular expressions accept:
no ``\\b`` (a backspace in PostgreSQL), no lookaround, no named groups, no inline
flags; matching is case-insensitive on both sides. Before matching, text is
normalised the same way in both places: NFKC (full-width letters to ASCII),
zero-width characters removed, runs of whitespace collapsed to one space.
"""

# Chinese text and curly quotes appear on purpose.

from __future__ import annotations

import re
import unicodedata

__all__ = ["INJECTION_PATTERNS", "injection_reason", "looks_like_injection", "normalize_for_safety"]

# (name, pattern). Names go into the rejected event's reason, so keep them stable.
INJECTION_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "ignore_instructions",
        r"(ignore|disregard|forget|override|bypass|skip)\s+(all\s+|any\s+|of\s+|the\s+|your\s+"
        r"|my\s+|these\s+|those\s+|every\s*thing\s+|everything\s+)*(previous|prior|above"
        r"|earlier|preceding|foregoing|former|original|initial|system|existing|safety)\s+"
        r"(instructions?|prompts?|rules?|directions?|guidelines?|commands?|context|messages?"
        r"|constraints?|directives?|text|conversation)",
    ),
    (
        "ignore_above",
        r"(ignore|disregard)\s+(all\s+|everything\s+|anything\s+)?(of\s+)?(the\s+|your\s+)?"
        r"(above|previous|prior|preceding|earlier|foregoing)\s*($|[.,!;:]|and\s|then\s|instead)",
    ),
    (
        "ignore_instructions_zh",
        r"(忽略|无视|忽视|不要理会|别理会|不用理会|跳过|忘记|忘掉|抛开|丢弃)\s*掉?\s*(你的|你)?\s*"
        r"(之前|以上|上面|前面|上述|先前|此前|原来|原有|原先|系统|所有|全部|一切|任何)\S{0,6}"
        r"(指令|指示|提示词|提示|规则|设定|命令|要求|约束|限制|安全策略|对话)",
    ),
    (
        "ignore_above_zh",
        r"(忽略|无视|忽视)\s*(以上|之前|上面|前面|上述)\s*(的)?\s*(所有|全部|一切)?\s*"
        r"($|[，,。.!！;；]|内容|并|然后|吧)",
    ),
    (
        "role_override",
        r"you('re|\s+are)\s+now\s+(a|an|my|the|in|free|no\s+longer|unrestricted|unfiltered"
        r"|uncensored|jailbroken|dan|evil|going\s+to\s+act)(\s|$|[.,!])"
        r"|from\s+now\s+on,?\s+you\s+(are|will\s+be|act\s+as)\s+(a|an|dan|my|the|no)\s"
        r"|(act|behave|respond)\s+as\s+(if\s+you\s+(are|were)\s+)?(an?\s+)?(unrestricted"
        r"|unfiltered|uncensored|jailbroken|evil|dan)"
        r"|pretend\s+(that\s+)?(you\s+are|you're|to\s+be)\s.{0,40}(no|without)\s+(rules"
        r"|restrictions|limits|filters|guidelines)",
    ),
    (
        "role_override_zh",
        r"你现在(是|扮演|变成|成为)|从现在(开始|起)\s*你(是|将是|将扮演|要扮演)"
        r"|扮演\S{0,10}(没有|不受|无)(任何)?(限制|约束|规则|审查)",
    ),
    (
        "system_prompt",
        r"system\s*prompt|system\s+message|(reveal|show|print|repeat|output|leak|display)\s+"
        r"(me\s+)?(your|the)\s+(initial\s+|hidden\s+|original\s+|secret\s+)?(instructions|prompt)",
    ),
    (
        "system_prompt_zh",
        r"系统提示|系统指令|(输出|显示|泄露|告诉我|重复|打印)\S{0,6}(提示词|初始指令|系统设定|隐藏指令)",
    ),
    (
        "developer_mode",
        r"developer\s+mode|dev\s+mode\s+(enabled|on)|god\s+mode|dan\s+mode|do\s+anything\s+now"
        r"|开发者模式|调试模式|上帝模式",
    ),
    ("jailbreak", r"jail\s*-?\s*break|越狱"),
    (
        "fake_role_tag",
        r"<\|?\s*(system|im_start|im_end)|\[\s*(system|inst)\s*\]|<<\s*sys\s*>>"
        r"|(^|\n)\s*(system|assistant)\s*:",
    ),
    (
        "safety_bypass",
        r"(bypass|disable|override|turn\s+off|ignore)\s+(your\s+|the\s+|all\s+|any\s+)*(safety"
        r"|content|security|moderation)\s+(filters?|rules|guidelines|polic(y|ies)|restrictions"
        r"|checks|guardrails)"
        r"|绕过\S{0,6}(安全|审查|限制|过滤|规则)|解除\S{0,6}(限制|封印|审查)",
    ),
)

_COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE)) for name, pattern in INJECTION_PATTERNS
)
# Zero-width space/joiners and the BOM: invisible, and a classic way to split a keyword.
_ZERO_WIDTH_RE = re.compile("[\u200b-\u200d\u2060\ufeff]")
_SPACE_RE = re.compile(r"[ \t\r\f\v]+")


def normalize_for_safety(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _ZERO_WIDTH_RE.sub("", text)
    return _SPACE_RE.sub(" ", text)


def injection_reason(text: str) -> str | None:
    """The name of the first injection pattern the text matches, or None."""
    normalized = normalize_for_safety(text)
    for name, pattern in _COMPILED:
        if pattern.search(normalized):
            return name
    return None


def looks_like_injection(text: str) -> bool:
    return injection_reason(text) is not None
