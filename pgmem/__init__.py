"""pgmem: long-term memory for LLM agents that lives inside PostgreSQL."""

__version__ = "0.1.0"
from pgmem.client import Memory as Memory
