"""Ways for agent frameworks to use pgmem without glue code.

- :mod:`pgmem.integrations.mcp_server`: the ``pgmem mcp`` server (extra ``mcp``).
- :mod:`pgmem.integrations.langgraph`: a LangGraph ``BaseStore`` (extra ``langgraph``).

Each module imports its framework, so only the extra you use has to be installed.
Both call :class:`pgmem.Memory`, so every rule still runs in the ``pgmem.*`` SQL
functions.
"""
