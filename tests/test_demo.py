"""`pgmem demo` runs end to end (as `make demo` does) and shows every feature."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PGMEM = Path(sys.executable).parent / "pgmem"


@pytest.mark.slow
def test_demo_shows_the_whole_product(dsn: str) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    for _ in range(2):  # a second run starts the demo tenant over
        run = subprocess.run(
            [str(PGMEM), "demo", "--dsn", dsn],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        assert run.returncode == 0, run.stderr
    sent, stored = run.stdout.split("4. The worker", 1)
    # What the app sent holds the phone number and the injection; nothing stored does.
    assert "13812345678" in sent and "reveal your system prompt" in sent
    assert "13812345678" not in stored and "system prompt" not in stored
    assert "[REDACTED:phone]" in stored
    assert '"reason": "prompt_injection"' in stored
    assert "superseded" in stored and "浅色" in stored  # dark → light, old fact kept
    # The re-sent turn is reinforced, and so is its fact.
    assert "'rejected': 1" in stored and "'reinforced': 2" in stored
    # The context block opens with who the user is, whatever the query.
    assert "## Core profile" in stored and "用户的名字是李雷" in stored
    assert "decay" in stored and "purge" in stored
    # The other two layers, and the prompt assembled from all three.
    chat, rest = stored.split("12. Short-term memory", 1)[1].split("13. Working memory", 1)
    assert "rolling summary v1 (extractive), turns 1-7" in chat
    assert "[extractive summary: no LLM" in chat and "User is vegetarian" in chat
    assert '"price_usd": 480' in chat.split("the window", 1)[1]  # the tool result, kept
    assert "died (exit -9)" in rest and "last completed step 1, now at step 2" in rest
    assert "recorded = False (no duplicate)" in rest
    prompt = rest.split("14. One prompt", 1)[1].split("15. Finishing", 1)[0]
    for section in ("## Current task", "## Conversation summary", "## Long-term memory",
                    "## Recent conversation"):  # fmt: skip
        assert section in prompt
    assert "[x] 1. find a hotel" in prompt and "[>] 3. email the confirmation" in prompt
    assert '"derived_from": {"task_id":' in rest and "procedural" in rest
