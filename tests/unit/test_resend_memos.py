"""The proxy's per-process memos of bodies it saw: bodies known to be under their
threshold (bounded, told apart by their bytes) and the bodies forwarded for compacted
ones (bounded by the bytes they hold, not only by their number)."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.composition import build_state
from app.formats.apis.chat_completions import CHAT_COMPLETIONS
from app.services.proxy import transparent
from app.services.proxy.call import ProxyCall, ProxyMode
from app.services.proxy.observer import NullProxyObserver
from app.services.proxy.report import ProxyReport
from app.services.proxy.resend_memo import ResendMemos
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry


def test_bodies_known_under_the_threshold_are_bounded_and_told_apart_by_their_bytes(
    settings: Settings, tokenizers: TokenizerRegistry
) -> None:
    state = build_state(settings, tokenizers=tokenizers)
    compactor = transparent.TransparentCompactor(
        state.estimation,
        state.compaction,
        state.summary_cache,
        NullProxyObserver(),
        ResendMemos(under_entries=2),
    )

    def call(text: str) -> ProxyCall:
        body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": text}]}
        raw = json.dumps(body).encode()
        return ProxyCall(CHAT_COMPLETIONS, "t1", raw, [], ProxyMode.TRANSPARENT)

    def remember(text: str) -> int:
        sent, report = call(text), ProxyReport()
        assert sent.body is not None
        assert asyncio.run(compactor.apply(sent, sent.body, report)) is None
        assert report.tokens_before is not None
        return report.tokens_before

    try:
        tokens_a = remember("a")
        remember("bb")
        assert compactor.known_under_threshold(call("a")) == tokens_a
        # The same length, other bytes: not known (its length alone does not decide).
        assert compactor.known_under_threshold(call("b")) is None
        assert compactor.known_under_threshold(call("ccc")) is None
        remember("ccc")  # evicts "bb", the least recently used
        assert compactor.known_under_threshold(call("bb")) is None
        assert compactor.known_under_threshold(call("a")) == tokens_a
        assert compactor.known_under_threshold(call("ccc")) is not None
    finally:
        state.close_store()


@pytest.mark.parametrize(("size", "kept"), [(1_000, 10), (400_000, 2)])
def test_compacted_bodies_are_bounded_by_the_bytes_they_hold(size: int, kept: int) -> None:
    # Issue 21.8: 32 entries of 32 MB bodies was about 1 GB per worker.
    memos = ResendMemos(compacted_entries=32, compacted_bytes=1_000_000)
    for i in range(10):
        body = {"messages": [{"role": "user", "content": "x" * size}], "n": i}
        memos.remember_compacted("t", "chat", f"raw{i}".encode(), body, (10, 5))
        assert memos.compacted_bytes <= 1_000_000
    # The newest are kept; the oldest ones went first.
    held = [i for i in range(10) if memos.compacted("t", "chat", f"raw{i}".encode())]
    assert held == list(range(10 - kept, 10))
    # Another tenant never gets this tenant's body.
    assert memos.compacted("u", "chat", b"raw9") is None


def test_a_body_larger_than_the_bound_is_not_kept() -> None:
    memos = ResendMemos(compacted_bytes=100)
    memos.remember_compacted("t", "chat", b"raw", {"content": "y" * 500}, (10, 5))
    assert memos.compacted("t", "chat", b"raw") is None
    assert memos.compacted_bytes == 0
