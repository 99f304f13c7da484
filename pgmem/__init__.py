"""pgmem: long-term memory for LLM agents that lives inside PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Memory"]

if TYPE_CHECKING:
    from pgmem.client import Memory


def __getattr__(name: str) -> Any:
    # `from pgmem import Memory` works as ever, but importing a light module such as
    # pgmem.config (every `pgmem` CLI start does) no longer loads the client with it.
    if name == "Memory":
        from pgmem.client import Memory

        return Memory
    raise AttributeError(f"module 'pgmem' has no attribute {name!r}")
