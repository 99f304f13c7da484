"""What the guard triggers add to each write: app-role ``pgmem.remember`` of
real LoCoMo turns, with the row triggers of revision 0002 on and off, in one run.

Rounds alternate on, off, off, on (ABBA), each its own turns, so drift (cache
warming, table growth, other load on the machine) falls on both sides alike; the
result is the ratio of the medians of the per-write times. Text-only writes (no
embedding): the triggers' share of a write with an embedding call is smaller still.

Run: ``python -m pgmem.lab.guard_bench ../shared/data/locomo-dev.json`` (server from
``PGMEM_DSN``, else the embedded one). It works in a database of its own, dropped
afterwards.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from pgmem import schema
from pgmem.lab.bench import TENANT, _tenant_connection, bench_database, unique_database
from pgmem.lab.eval import load_locomo
from pgmem.queries import bench_guards as q
from pgmem.queries.bench_layers import CREATE_TENANT

DEFAULT_ROUNDS = 12  # per side, in ABBA order
DEFAULT_ROUND_SIZE = 100  # turns per round (one statement)


@dataclass
class GuardResult:
    writes_per_side: int
    ms_per_write_on: float  # median over rounds
    ms_per_write_off: float
    ratio: float  # on / off

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _turns(path: Path) -> list[tuple[str, str]]:
    """(subject, content) of every LoCoMo turn: the subject is the speaker's conversation."""
    return [
        (f"{c.sample_id}:{t.speaker}", t.content())
        for c in load_locomo(path)
        for s in c.sessions
        for t in s.turns
    ]


def run(
    server_dsn: str,
    locomo: Path,
    *,
    rounds: int = DEFAULT_ROUNDS,
    round_size: int = DEFAULT_ROUND_SIZE,
) -> GuardResult:
    turns = _turns(locomo)
    needed = (2 * rounds + 1) * round_size
    if len(turns) < needed:
        raise ValueError(f"{locomo} has {len(turns)} turns; {needed} are needed")
    chunks = [turns[i * round_size : (i + 1) * round_size] for i in range(2 * rounds + 1)]
    times: dict[bool, list[float]] = {True: [], False: []}
    with bench_database(server_dsn, unique_database("pgmem_bench_guards")) as dsn:
        schema.upgrade(dsn)
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(CREATE_TENANT, {"tenant": TENANT})
        with psycopg.connect(dsn, autocommit=True) as admin, _tenant_connection(dsn) as app:
            # Warm-up round (plans, caches), guards on; not counted.
            order = [True] + [on for _ in range(rounds // 2) for on in (True, False, False, True)]
            order += [True, False] if rounds % 2 else []
            for chunk, guarded in zip(chunks, order, strict=False):
                admin.execute(q.ENABLE_GUARDS if guarded else q.DISABLE_GUARDS)
                params = {"subjects": [s for s, _ in chunk], "contents": [c for _, c in chunk]}
                started = time.perf_counter()
                row = app.execute(q.REMEMBER_ROUND, params).fetchone()
                elapsed = time.perf_counter() - started
                assert row is not None and row["writes"] >= len(chunk)
                times[guarded].append(elapsed * 1000 / len(chunk))
            admin.execute(q.ENABLE_GUARDS)
    on = statistics.median(times[True][1:])  # the first is the warm-up
    off = statistics.median(times[False])
    return GuardResult(rounds * round_size, on, off, on / off)


def main(argv: list[str]) -> int:
    from pgmem.db import resolve_dsn

    if len(argv) != 1:
        print("usage: python -m pgmem.lab.guard_bench LOCOMO_JSON", file=sys.stderr)
        return 2
    result = run(resolve_dsn(None), Path(argv[0]))
    print(json.dumps(result.as_dict(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
