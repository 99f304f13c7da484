"""The one setup of an OpenAI-compatible client, shared by embeddings
(:mod:`pgmem.embed`) and the LLM extractor (:mod:`pgmem.extract.llm`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai

# Connecting is quick or it fails; a dead endpoint should not eat the whole timeout.
CONNECT_TIMEOUT = 5.0


def openai_client(
    base_url: str | None, api_key: str | None, *, timeout: float, max_retries: int
) -> openai.OpenAI:
    """A client for ``base_url`` (None: OpenAI's). Raises ``openai.OpenAIError`` when
    it cannot be set up (no key for OpenAI itself)."""
    import openai  # imported on use: rules-only and local-model setups never load it

    if api_key is None and base_url is not None:
        # Self-hosted servers usually need no key, but the client insists on one.
        api_key = "unused"
    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key,
        max_retries=max_retries,
        timeout=openai.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
    )
