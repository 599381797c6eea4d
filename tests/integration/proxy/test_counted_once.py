"""A proxied request is counted once (issue 20.8): the history the native step or the
transparent step counted is handed along to the compaction, and the compacted history's
count is built from the parts already counted, not made again."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.formats import anthropic, openai
from app.services.estimation import EstimationService
from tests.conftest import CLAUDE_CODE, load_json
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service
from tests.integration.proxy.clients import anthropic_client, openai_client
from tests.integration.proxy.conftest import proxy_settings

AGENT = CLAUDE_CODE / "4d5611e5.agent-a2898e3"  # 66 messages, ~54k tokens


class Calls:
    def __init__(self) -> None:
        self.counts = 0
        self.parses = 0


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    seen = Calls()
    count, anthropic_parse, openai_parse = (
        EstimationService.count,
        anthropic.parse,
        openai.parse,
    )

    def counting(self: EstimationService, *args: Any, **kwargs: Any) -> Any:
        seen.counts += 1
        return count(self, *args, **kwargs)

    def parsing(original: Any) -> Any:
        def parse(*args: Any, **kwargs: Any) -> Any:
            seen.parses += 1
            return original(*args, **kwargs)

        return parse

    monkeypatch.setattr(EstimationService, "count", counting)
    # Each format is its module: the registry calls the module's `parse`.
    monkeypatch.setattr(anthropic, "parse", parsing(anthropic_parse))
    monkeypatch.setattr(openai, "parse", parsing(openai_parse))
    return seen


@pytest.fixture
def proxy(tmp_path: Path, upstream: FakeUpstream) -> Iterator[str]:
    # A 64k window: the 54k-token transcript is over its threshold (31,232).
    models = tmp_path / "models.json"
    models.write_text(
        '{"models": {"small-window": {"provider": "openai", "context_window": 64000,'
        ' "max_output_tokens": 8192, "encoding": "o200k_base"}}}'
    )
    with live_service(proxy_settings(tmp_path, upstream, models_file=models)) as url:
        yield url


def test_a_native_compaction_counts_and_parses_the_history_once(
    proxy: str, upstream: FakeUpstream, calls: Calls
) -> None:
    body = load_json(Path(f"{AGENT}.anthropic.json"))
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 30_000}}
    anthropic_client(proxy).beta.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1000,
        messages=copy.deepcopy(body["messages"]),
        context_management={"edits": [edit]},
        betas=["compact-2026-01-12"],
    )
    (sent,) = upstream.bodies()
    assert len(sent["messages"]) < len(body["messages"])  # it was compacted
    # Before: counted three times (the edit, the compaction, the compacted history).
    assert calls.counts == 1
    assert calls.parses == 1


def test_a_transparent_compaction_counts_the_history_once(
    proxy: str, upstream: FakeUpstream, calls: Calls
) -> None:
    body = load_json(Path(f"{AGENT}.openai.json"))
    openai_client(proxy).chat.completions.create(
        model="small-window", messages=copy.deepcopy(body["messages"])
    )
    (sent,) = upstream.bodies()
    assert len(sent["messages"]) < len(body["messages"])
    # Before: counted for the decision, then again inside the compaction.
    assert calls.counts == 1
    assert calls.parses == 1
