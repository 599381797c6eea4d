"""Usage anchor, estimate floor, per-message cache, images."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from app.engine.counting.count_cache import TokenCountCache
from app.engine.counting.estimate import UsageReport, estimate_context
from app.engine.counting.images import ANTHROPIC_PIXELS, GPT_4O_TILES, image_size_from_base64
from app.registry import load_registry
from app.services.estimation import EstimationService
from app.services.history import HistoryInput
from app.tokenizers.bpe import TokenizerRegistry


@pytest.fixture
def estimation(tokenizers: TokenizerRegistry) -> EstimationService:
    return EstimationService(tokenizers, load_registry(), TokenCountCache(), image_tokens=1200)


def test_usage_anchor_is_latest_report_plus_messages_after_it() -> None:
    usage = [UsageReport(1, input_tokens=100, output_tokens=10), UsageReport(3, 500, 20, 30, 40)]
    estimate = estimate_context([10, 20, 30, 40, 50, 60], usage=usage)
    assert estimate.anchor == usage[1]
    assert estimate.tokens == 500 + 20 + 30 + 40 + 50 + 60


def test_reports_below_the_floor_are_stale_and_ignored() -> None:
    usage = [UsageReport(1, input_tokens=90_000)]
    estimate = estimate_context([10, 20, 30], usage=usage, estimate_floor=2)
    assert estimate.anchor is None
    assert estimate.tokens == 60


def test_reports_pointing_past_the_history_are_ignored() -> None:
    estimate = estimate_context([10], usage=[UsageReport(5, input_tokens=1)])
    assert estimate.anchor is None


def test_appending_one_message_only_counts_that_message(estimation: EstimationService) -> None:
    messages = [{"role": "user", "content": f"message number {i}"} for i in range(50)]
    estimation.count(HistoryInput(messages=messages))
    misses = estimation.cache.misses
    messages.append({"role": "assistant", "content": "a new reply"})
    estimation.count(HistoryInput(messages=messages))
    assert estimation.cache.misses - misses == 1


def test_cache_is_keyed_by_content_not_position(estimation: EstimationService) -> None:
    first = estimation.count(HistoryInput(messages=[{"role": "user", "content": "same"}]))
    second = estimation.count(
        HistoryInput(
            messages=[{"role": "user", "content": "same"}, {"role": "user", "content": "x"}]
        )
    )
    assert first.per_message[0] == second.per_message[0]
    edited = estimation.count(
        HistoryInput(messages=[{"role": "user", "content": "same but longer"}])
    )
    assert edited.per_message[0] > first.per_message[0]


def test_chars4_heuristic_is_ceil_of_length_over_four(estimation: EstimationService) -> None:
    counted = estimation.count(
        HistoryInput(messages=[{"role": "user", "content": "x" * 9}], tokenizer="chars/4")
    )
    # 3 framing + ceil(4/4) for the role "user" + ceil(9/4) for the content
    assert counted.per_message == [3 + 1 + 3]
    assert counted.choice.method == "heuristic" and not counted.choice.exact


def _png(width: int, height: int) -> str:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = (
        struct.pack(">I", len(ihdr))
        + b"IHDR"
        + ihdr
        + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    )
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk).decode()


def _gif(width: int, height: int) -> str:
    return base64.b64encode(b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 8).decode()


def _jpeg(width: int, height: int) -> str:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return base64.b64encode(b"\xff\xd8" + app0 + sof + b"\xff\xd9").decode()


def _webp(width: int, height: int) -> str:
    body = b"WEBPVP8X" + struct.pack("<I", 10) + b"\x00" * 4
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return base64.b64encode(b"RIFF" + struct.pack("<I", len(body)) + body).decode()


@pytest.mark.parametrize("make", [_png, _gif, _jpeg, _webp])
def test_image_size_is_read_from_headers(make: object) -> None:
    assert callable(make)
    assert image_size_from_base64(make(640, 480)) == (640, 480)
    assert image_size_from_base64("data:image/png;base64," + make(32, 16)) == (32, 16)


def test_provider_image_formulas() -> None:
    assert GPT_4O_TILES.tokens(1024, 1024, "high") == 85 + 170 * 4
    assert GPT_4O_TILES.tokens(4000, 4000, "low") == 85
    assert ANTHROPIC_PIXELS.tokens(1000, 1000, None) == 1334


def test_images_cost_by_size_when_known_and_default_otherwise(
    estimation: EstimationService,
) -> None:
    def image_message(data: str) -> dict[str, object]:
        source = {"type": "base64", "media_type": "image/png", "data": data}
        return {"role": "user", "content": [{"type": "image", "source": source}]}

    small = estimation.count(HistoryInput(messages=[image_message(_png(100, 100))]))
    unknown = estimation.count(HistoryInput(messages=[image_message("not an image")]))
    assert small.per_message[0] < unknown.per_message[0]
    assert unknown.per_message[0] >= 1200
