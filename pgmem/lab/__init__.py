"""The lab: measuring harnesses, not part of the runtime path.

- :mod:`pgmem.lab.eval`: retrieval quality on LoCoMo (``pgmem eval locomo``,
  docs/eval.md);
- :mod:`pgmem.lab.bench`: latency, throughput and size on synthetic data
  (``pgmem bench``, docs/benchmarks.md, which also holds the targets);
- :mod:`pgmem.lab.bench_real`: the same on LoCoMo text beside a plain pgvector
  baseline in the same run (``pgmem bench --data locomo``).

They work in scratch databases of their own and call the engine's SQL
(``pgmem._decayed``, ``pgmem._decay_policy``, ``pgmem.recall``…) rather than
restating its formulas.
"""
