"""The example agent loop, self-contained: a real compactor and the fake model on loopback."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def agent_loop(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    # The example is a script next to its fake model, not a package.
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return importlib.import_module("agent_loop")


def test_the_loop_compacts_before_and_after_an_overflow_and_finishes(
    agent_loop: ModuleType,
) -> None:
    fake_model = importlib.import_module("fake_model")
    lines: list[str] = []
    report = agent_loop.run_self_contained(turns=30, report=lines.append)

    assert report.done, "\n".join(lines)  # the fake model gave its final answer
    triggers = [t.compaction for t in report.turns if t.compaction is not None]
    assert "auto" in triggers and "overflow" in triggers, "\n".join(lines)
    # Every request the model accepted fit its window, and compaction made room each time.
    assert all(0 < t.prompt_tokens <= fake_model.DEFAULT_CONTEXT_WINDOW for t in report.turns)
    for turn in report.turns:
        if turn.compaction is not None:
            assert turn.tokens_after < turn.tokens_before
    # Nothing is lost: the task, every reply and every tool result stay in the transcript.
    expected_messages = 1 + 2 * (len(report.turns) - 1) + 1
    assert f"{expected_messages} messages stored" in lines[-1]
    assert "model refused the context" in "\n".join(lines)


def test_the_example_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_loop.py"), "--self-contained", "--turns", "6"],
        cwd=EXAMPLES.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "compacted: yes (auto" in done.stdout
    assert "turn budget used up: 6 turns" in done.stdout
