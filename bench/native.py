"""Native context management (SPEC §11) on a real transcript: what a compaction saves,
what the round-tripped state costs, and the stream rewriting overhead as a ratio against a
plain relay measured in the same run.

Run: .venv/bin/python bench/native.py
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.native_edits import NativeReport  # noqa: E402
from app.formats.apis.messages import MESSAGES  # noqa: E402
from app.formats.apis.messages_edits import compaction_block  # noqa: E402
from app.formats.apis.messages_reports import StreamReportWriter  # noqa: E402
from app.main import build_state  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.common import measure, ms  # noqa: E402

AGENT = ROOT / "tests" / "data" / "claude_code" / "4d5611e5.agent-a2898e3.anthropic.json"
TRIGGER = 30_000


def _row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<46}{value:>14}  {note}")


def _stream(words: int) -> bytes:
    def sse(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    start = {"type": "message_start", "message": {"usage": {"input_tokens": 10}}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}
    end = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": words}}
    return sse(start) + sse(block) + sse(delta) * words + sse(end)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = build_state(Settings(database_url=f"sqlite:///{tmp}/b.db", state_key="k" * 32))
        body = json.loads(AGENT.read_text())
        cm = {
            "edits": [
                {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER}}
            ]
        }
        service = state.native.anthropic
        edited = asyncio.run(service.apply({**copy.deepcopy(body), "context_management": cm}))
        assert edited.compaction is not None and edited.compaction.state is not None
        print(f"native compaction, {AGENT.name} (extractive summarizer, trigger {TRIGGER:,})")
        _row("input tokens before", f"{edited.original_input_tokens:,}")
        _row(
            "input tokens forwarded",
            f"{edited.input_tokens:,}",
            f"{edited.input_tokens / edited.original_input_tokens:.1%} of before",
        )
        _row(
            "messages before / forwarded",
            f"{len(body['messages'])} / {len(edited.body['messages'])}",
        )
        _row("encrypted_content (signed state)", f"{len(edited.compaction.state):,} B")
        turn2 = copy.deepcopy(body)
        turn2["context_management"] = cm
        turn2["messages"] += [
            {
                "role": "assistant",
                "content": [
                    compaction_block(edited.compaction.summary, edited.compaction.state),
                    {"type": "text", "text": "ok"},
                ],
            },
            {"role": "user", "content": "next"},
        ]
        apply_s = measure(
            lambda: asyncio.run(service.apply({**body, "context_management": cm})), 5, 1
        )
        rebuild_s = measure(lambda: asyncio.run(service.apply(turn2)), 5, 1)
        _row("turn with compaction (apply)", ms(apply_s))
        _row("next turn (rebuild from the block)", ms(rebuild_s), f"{rebuild_s / apply_s:.2f}x")

        upstream = _stream(2000)
        report = NativeReport(edited.report().compaction, (), has_edits=True)

        def relay() -> None:
            # The proxy's own event parsing for a bound session's transcript.
            capture = MESSAGES.stream_capture()
            for i in range(0, len(upstream), 4096):
                capture.feed(upstream[i : i + 4096])

        def rewrite() -> None:
            writer = StreamReportWriter(report)
            for i in range(0, len(upstream), 4096):
                writer.feed(upstream[i : i + 4096])

        base = measure(relay, 9, 2)
        cost = measure(rewrite, 9, 2)
        print(f"stream rewriting, {len(upstream):,} B of events in 4 KiB chunks")
        events = upstream.count(b"\n\n")
        _row("proxy's stream capture parsing (baseline)", ms(base))
        _row(
            "compaction block + renumbered indexes",
            ms(cost),
            f"{cost / base:.2f}x baseline, {cost / events * 1e6:.1f} us/event",
        )


if __name__ == "__main__":
    main()
