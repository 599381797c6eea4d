"""The proxy's per-process memos of bodies it saw: bodies known to be under their
threshold (bounded, told apart by their bytes) and the bodies forwarded for compacted
ones (bounded by the bytes they hold, not only by their number)."""

from __future__ import annotations

import asyncio
import json

import orjson
import pytest

from app.composition import build_state
from app.formats.apis.chat_completions import CHAT_COMPLETIONS
from app.services.proxy import transparent
from app.services.proxy.call import ProxyCall, ProxyMode
from app.services.proxy.observer import NullProxyObserver
from app.services.proxy.report import ProxyReport
from app.services.proxy.resend_memo import (
    CompactedResend,
    ResendMemos,
    compacted_resend,
    rebuilt_history,
)
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

    def known(sent: ProxyCall) -> int | None:
        return asyncio.run(compactor.known_under_threshold(sent))

    try:
        tokens_a = remember("a")
        remember("bb")
        assert known(call("a")) == tokens_a
        # The same length, other bytes: not known (its length alone does not decide).
        assert known(call("b")) is None
        assert known(call("ccc")) is None
        remember("ccc")  # evicts "bb", the least recently used
        assert known(call("bb")) is None
        assert known(call("a")) == tokens_a
        assert known(call("ccc")) is not None
    finally:
        state.close_store()


def recipe(i: int, size: int) -> CompactedResend:
    """A recipe whose changed messages (the summary) are about `size` bytes."""
    middle = orjson.dumps([{"role": "user", "content": "x" * size, "n": i}])
    return CompactedResend(4, 0, 3, middle, 10, 5)


@pytest.mark.parametrize(("size", "kept"), [(1_000, 10), (400_000, 2)])
def test_compacted_bodies_are_bounded_by_the_bytes_they_hold(size: int, kept: int) -> None:
    # Issue 21.8: 32 entries of 32 MB bodies was about 1 GB per worker.
    memos = ResendMemos(compacted_entries=32, compacted_bytes=1_000_000)
    for i in range(10):
        asyncio.run(memos.remember_compacted("t", "chat", f"raw{i}".encode(), recipe(i, size)))
        assert memos.compacted_bytes <= 1_000_000
    # The newest are kept; the oldest ones went first.
    held = [i for i in range(10) if asyncio.run(memos.compacted("t", "chat", f"raw{i}".encode()))]
    assert held == list(range(10 - kept, 10))
    # Another tenant never gets this tenant's body.
    assert asyncio.run(memos.compacted("u", "chat", b"raw9")) is None


def test_a_body_larger_than_the_bound_is_not_kept() -> None:
    memos = ResendMemos(compacted_bytes=100)
    asyncio.run(memos.remember_compacted("t", "chat", b"raw", recipe(0, 500)))
    assert asyncio.run(memos.compacted("t", "chat", b"raw")) is None
    assert memos.compacted_bytes == 0


def test_a_recipe_rebuilds_exactly_the_forwarded_history() -> None:
    system = {"role": "system", "content": "be brief"}
    received = [system, *({"role": "user", "content": f"turn {i}"} for i in range(6))]
    summary = {"role": "user", "content": "<summary>turns 0-3</summary>"}
    forwarded = [system, summary, *received[5:]]
    resend = compacted_resend(received, forwarded, (100, 40))
    assert resend is not None
    # Only the summary is held, not the kept messages.
    assert (resend.lead, resend.keep_from, resend.history_len) == (1, 5, 7)
    assert orjson.loads(resend.middle) == [summary]
    # The same received history (parsed again from the same bytes) gives the same bytes.
    again = orjson.loads(orjson.dumps(received))
    assert orjson.dumps(rebuilt_history(resend, again)) == orjson.dumps(forwarded)
    # A history of another length does not fit the recipe.
    assert rebuilt_history(resend, again[:-1]) is None


def test_a_float_that_equals_an_int_is_not_taken_for_unchanged() -> None:
    # 1 == 1.0 in Python, not on the wire: the recipe must keep the forwarded bytes.
    received = [{"role": "user", "content": "a", "n": 1}, {"role": "user", "content": "b"}]
    forwarded = [{"role": "user", "content": "a", "n": 1.0}, {"role": "user", "content": "b"}]
    resend = compacted_resend(received, forwarded, (2, 2))
    assert resend is not None
    assert orjson.dumps(rebuilt_history(resend, received)) == orjson.dumps(forwarded)
