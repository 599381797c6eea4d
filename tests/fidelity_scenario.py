"""The fidelity scenario: facts of five kinds planted early in a history, then many rounds of
unrelated work, each ending in a forced compaction. A small, fixed scenario for the tests
(tests/unit/test_fidelity.py, the inspector and session tests); bench/fidelity.py measures
on generated canaries and real transcripts instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.compaction.marker import SummaryMarker
from app.engine.errors import IneffectiveCompactionError
from app.engine.ports import SummarizerInfo, SummaryRequest, SummaryResult
from app.services.compaction import CompactionService
from app.services.history import CompactOptions, HistoryInput

KINDS = ("safety rule", "constraint", "fact", "goal", "preference")
PLANTED: dict[str, tuple[str, ...]] = {
    "safety rule": (
        "Never run `git push --force` on main.",
        "Never delete anything under `data/raw/`.",
        "Always ask before running database migrations.",
    ),
    "constraint": (
        "Do not change the public signature of `parse_invoice()`.",
        "The export must stream rows instead of loading them all into memory.",
        "Keep Python 3.9 compatibility.",
    ),
    "fact": (
        "The staging database listens on port 5433.",
        "The CI runner image is `python:3.12-slim`.",
        "Invoices are stored with UTC timestamps.",
    ),
    "goal": (
        "Add CSV export to the invoicing module.",
        "Then add a `--since` filter to the export command.",
        "Finally, document the export in `docs/export.md`.",
    ),
    "preference": (
        "I prefer pytest fixtures over setUp methods.",
        "Use f-strings instead of `%` formatting.",
        "New functions should have type hints.",
    ),
}
# The service keeps every kind by itself (SPEC §14); caller pins are for anything else.
CALLER_PINS = ("Deploys go through `make release`.",)
FILES_READ = ("src/invoicing/export.py", "src/invoicing/models.py")
FILE_MODIFIED = "src/invoicing/export.py"
PLANTED_ERROR = "ImportError: cannot import name 'CsvWriter' from 'invoicing.export'"
KEEP_RECENT_TOKENS = 300

_FILLER = "    total = sum(line.amount for line in invoice.lines)  # keeps the running sum\n"
FORGETFUL_SUMMARY = "\n\n".join(
    [
        "## Goal\n(none)",
        "## Constraints & Preferences\n(none)",
        "## Progress\n### Done\n(none)\n### In Progress\n(none)\n### Blocked\n(none)",
        "## Key Decisions\n(none)",
        "## Next Steps\n1. Continue.",
        "## Critical Context\n(none)",
    ]
)


class ForgetfulSummarizer:
    """A model that forgets everything it can: the required headings and nothing else."""

    @property
    def info(self) -> SummarizerInfo:
        return SummarizerInfo(provider="fake", model="forgetful")

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text=FORGETFUL_SUMMARY)


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _tool_round(call_id: str, name: str, result: str, **arguments: Any) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [_call(call_id, name, **arguments)]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def opening_turns() -> list[dict[str, Any]]:
    """The start of the session, where every planted fact is said once."""
    p = PLANTED
    return [
        {
            "role": "user",
            "content": f"{p['goal'][0]} {p['safety rule'][0]} {p['constraint'][0]} "
            f"{p['preference'][0]}",
        },
        *_tool_round("c1", "Read", _FILLER * 20, file_path=FILES_READ[0]),
        *_tool_round("c2", "Read", _FILLER * 20, file_path=FILES_READ[1]),
        {"role": "assistant", "content": "I'll add a CsvWriter class to the export module."},
        {"role": "user", "content": f"{p['safety rule'][1]} {p['constraint'][1]} {p['goal'][1]}"},
        *_tool_round("c3", "Edit", "The file was updated.", file_path=FILE_MODIFIED),
        *_tool_round(
            "c4",
            "Bash",
            f"Traceback (most recent call last):\n{PLANTED_ERROR}",
            command="pytest -q",
        ),
        {
            "role": "user",
            "content": f"Some context: {p['fact'][0]} {p['fact'][1]} {p['fact'][2]} "
            f"{p['preference'][1]} {p['preference'][2]}",
        },
        {"role": "assistant", "content": "Noted. I'll fix the import next."},
        {
            "role": "user",
            "content": f"{p['safety rule'][2]} {p['constraint'][2]} {p['goal'][2]}",
        },
        {"role": "assistant", "content": "Understood, I'll keep all of that in mind."},
    ]


def round_turns(number: int) -> list[dict[str, Any]]:
    """Unrelated work of one round: a request, a file read, a reply."""
    path = f"src/reports/module_{number}.py"
    return [
        {"role": "user", "content": f"Round {number}: look over `{path}` and tidy the helpers."},
        *_tool_round(f"r{number}", "Read", _FILLER * 25, file_path=path),
        {"role": "assistant", "content": f"Module {number} reads fine; I'll move to the next one."},
    ]


@dataclass(frozen=True, slots=True)
class RoundResult:
    number: int
    survival: dict[str, float]
    tokens_after: int
    restored: int
    text: str
    summary: str


def survival(text: str) -> dict[str, float]:
    """Share of each kind's planted facts present verbatim in `text`."""
    return {
        kind: sum(fact in text for fact in facts) / len(facts) for kind, facts in PLANTED.items()
    }


def history_text(messages: Sequence[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


async def run_rounds(
    service: CompactionService, rounds: int = 10, pinned: Sequence[str] = ()
) -> list[RoundResult]:
    """Compacts after the opening and after each round of new turns, forced every time."""
    history = opening_turns()
    results: list[RoundResult] = []
    for number in range(1, rounds + 1):
        history = [*history, *round_turns(number)]
        request = HistoryInput(
            messages=history, format="openai", keep_recent_tokens=KEEP_RECENT_TOKENS
        )
        try:
            outcome = await service.compact(
                request, CompactOptions(force=True, pinned=tuple(pinned))
            )
        except IneffectiveCompactionError as exc:
            raise AssertionError(f"round {number}: {exc}") from exc
        assert outcome.compacted and outcome.messages is not None, outcome.reason
        assert outcome.tokens_after is not None
        history = outcome.messages
        restored = len(outcome.finished.restored) if outcome.finished else 0
        text = history_text(history)
        summary = SummaryMarker.parse(str(history[0]["content"])) or ""
        results.append(
            RoundResult(number, survival(text), outcome.tokens_after, restored, text, summary)
        )
    return results
