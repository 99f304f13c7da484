"""The lab: measuring harnesses, not part of the runtime path.

- :mod:`pgmem.lab.eval`: retrieval quality on LoCoMo and on the shipped Chinese set
  (``pgmem eval locomo``, ``pgmem eval zh``, docs/eval.md);
- :mod:`pgmem.lab.sweep`: the scoring settings swept on LoCoMo, ingesting once
  (``pgmem eval sweep``: where the defaults come from);
- :mod:`pgmem.lab.embed_bench`: the local embedders' speed, alone and end to end
  with recall (``pgmem eval embedders``);
- :mod:`pgmem.lab.bench`: latency, throughput and size on synthetic data
  (``pgmem bench``, docs/benchmarks.md, which also holds the targets);
- :mod:`pgmem.lab.bench_real`: the same on LoCoMo text beside a plain pgvector
  baseline in the same run (``pgmem bench --data locomo``).

All work in scratch databases of their own and call the engine's SQL
(``pgmem._decayed``, ``pgmem._decay_policy``, ``pgmem.recall``…) rather than
restating its formulas.
"""
