"""The query registry: every SQL statement the Python layer runs, by name.

The engine is the ``pgmem.*`` SQL functions in ``sql/functions/``; Python only calls
them. Their calls live here and nowhere else (``tests/test_registry.py`` fails on SQL
text anywhere else in ``pgmem/`` or ``cli/``), one module per consumer:

- :mod:`pgmem.queries.client`: the ``Memory`` client and the memory CLI verbs
  (re-exported here, so ``queries.RECALL`` is ``queries.client.RECALL``);
- :mod:`pgmem.queries.worker`: the worker;
- :mod:`pgmem.queries.admin`: the CLI's administration verbs (tenants, maintenance,
  the demo);
- :mod:`pgmem.queries.layers`: short-term and working memory and the assembled prompt
  (sessions, tasks, the worker's fold pass);
- :mod:`pgmem.queries.bench_layers`: ``pgmem bench --layers``;
- :mod:`pgmem.queries.schema`: schema management and the embedded server;
- :mod:`pgmem.queries.safety`: the safety measurement (`pgmem eval safety`);
- :mod:`pgmem.queries.citus`: the Citus cluster, its CLI verbs and ``pgmem bench --citus``;
- :mod:`pgmem.queries.bench`: ``pgmem bench`` (the scale benchmark);
- :mod:`pgmem.queries.bench_real`: ``pgmem bench --data locomo`` (real text, the pgvector
  baseline);
- :mod:`pgmem.queries.eval`: ``pgmem eval`` (LoCoMo retrieval);
- :mod:`pgmem.queries.lab`: the lab's scratch databases and application-like sessions;
- :mod:`pgmem.queries.bench_guards`: the guard triggers' write cost (``pgmem.lab.guard_bench``);
- :mod:`pgmem.queries.doctor` and :mod:`pgmem.queries.backlog`: ``pgmem doctor`` and the
  worker's progress bars;
- :mod:`pgmem.queries.integrations`: the MCP server and the LangGraph store.

Rules: a statement is a module-level ``Final`` string (or a ``psycopg.sql.SQL``
template when it must name an identifier), named in UPPER_SNAKE after what it does;
one name per distinct statement and one statement per name (the test checks that no
two names hold the same text); parameters are named (``%(x)s``) except where a
caller passes a tuple; optional filters are ``(%(x)s::type is null or …)`` so that
nothing is assembled at run time.
"""

from pgmem.queries.client import *  # noqa: F403
from pgmem.queries.client import __all__ as __all__
