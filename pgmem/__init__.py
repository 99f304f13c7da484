"""pgmem: long-term memory for LLM agents that lives inside PostgreSQL."""

__version__ = "0.1.0"
