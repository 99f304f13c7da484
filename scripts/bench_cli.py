"""How fast the `pgmem` command starts, verb by verb, and what each one imports.

    .venv/bin/python scripts/bench_cli.py [--runs 5] [--dsn DSN]

Runs each verb a newcomer types first as a fresh process (the way a shell runs it),
`--runs` times, against a throwaway tenant on PGMEM_DSN or the embedded server, and
prints a Markdown table: best and median wall time, and which heavy libraries the
verb loaded (torch, sentence-transformers, openai, alembic, SQLAlchemy, numpy). A
read verb should load none of them. Numbers only: nothing here passes or fails on
time (tests/test_cli_ux.py checks the report and the imports, never the seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

PGMEM = Path(sys.executable).parent / "pgmem"
HEAVY = ("torch", "sentence_transformers", "openai", "alembic", "sqlalchemy", "numpy")
# Runs `pgmem ARGS...` in this interpreter, then prints the heavy modules it loaded.
PROBE = """
import sys
from pgmem.cli.app import main
sys.argv = ["pgmem", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
sys.stderr.write("\\nHEAVY=" + ",".join(heavy) + "\\n")
"""


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PGMEM), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def _heavy(args: list[str], env: dict[str, str]) -> str:
    probe = f"HEAVY = {HEAVY!r}\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    marker = [line for line in done.stderr.splitlines() if line.startswith("HEAVY=")]
    return marker[-1].removeprefix("HEAVY=") if marker else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dsn", default=os.environ.get("PGMEM_DSN"))
    options = parser.parse_args()

    env = dict(os.environ, COLUMNS="100")
    if options.dsn:
        env["PGMEM_DSN"] = options.dsn
    tenant = f"bench_cli_{uuid.uuid4().hex[:8]}"
    env["PGMEM_TENANT"] = tenant
    setup = _run(["tenant", "create", tenant], env)
    if setup.returncode != 0:
        sys.exit(f"cannot create tenant {tenant}: {setup.stderr.strip()}")
    try:
        added = _run(["add", "Likes green tea", "--raw", "--no-embed", "-u", "bob", "--json"], env)
        memory_id = str(json.loads(added.stdout)[0]["memory_id"])
        verbs = [
            ["--help"],
            ["list"],
            ["show", memory_id],
            ["history", memory_id],
            ["stats"],
            ["search", "tea", "-u", "bob", "--no-embed"],
            ["jobs"],
            ["tenant", "list"],
            ["add", "Plays chess", "--raw", "--no-embed", "-u", "bob"],
            ["add", "I play go", "--enqueue", "-u", "bob"],
        ]
        print(f"`pgmem` start-up, {options.runs} run(s) each, fresh process per run\n")
        print("| command | best s | median s | heavy libraries loaded |")
        print("|---|---:|---:|---|")
        for args in verbs:
            seconds = []
            for _ in range(options.runs):
                started = time.perf_counter()
                result = _run(args, env)
                seconds.append(time.perf_counter() - started)
                if result.returncode != 0:
                    sys.exit(f"pgmem {' '.join(args)} failed: {result.stderr.strip()}")
            heavy = _heavy(args, env) or "none"
            print(
                f"| `pgmem {' '.join(args)}` | {min(seconds):.3f} "
                f"| {statistics.median(seconds):.3f} | {heavy} |"
            )
    finally:
        _run(["tenant", "drop", tenant, "--yes"], env)


if __name__ == "__main__":
    main()
