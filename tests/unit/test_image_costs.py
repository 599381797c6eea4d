"""Image costs per model family, on generated PNGs: OpenAI tiles (gpt-4o, gpt-4o-mini),
OpenAI patches (gpt-4.1-mini/-nano, o4-mini), Anthropic pixels/750."""

from __future__ import annotations

import math
import zlib
from typing import Any

import pytest

from app.engine.counting.count_cache import TokenCountCache
from app.engine.counting.images import image_size_from_base64
from app.registry import load_registry
from app.services.estimation import CountedHistory, EstimationService
from app.services.history import HistoryInput
from app.tokenizers.bpe import TokenizerRegistry
from tests.pngs import png_base64, png_bytes, png_data_url

DEFAULT_IMAGE_TOKENS = 1200


@pytest.fixture
def estimation(tokenizers: TokenizerRegistry) -> EstimationService:
    return EstimationService(
        tokenizers, load_registry(), TokenCountCache(), image_tokens=DEFAULT_IMAGE_TOKENS
    )


def _openai(url: str | None, detail: str | None) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "What is in this picture?"}]
    if url is not None:
        image: dict[str, Any] = {"url": url}
        if detail is not None:
            image["detail"] = detail
        parts.append({"type": "image_url", "image_url": image})
    return [{"role": "user", "content": parts}]


def _image_cost(
    estimation: EstimationService, model: str, url: str | None, detail: str | None = None
) -> tuple[int, CountedHistory]:
    with_image = estimation.count(HistoryInput(messages=_openai(url, detail), model=model))
    without = estimation.count(HistoryInput(messages=_openai(None, None), model=model))
    return with_image.estimate.tokens - without.estimate.tokens, with_image


def test_generated_png_is_a_real_png_of_that_size() -> None:
    raw = png_bytes(300, 17)
    assert raw.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(zlib.decompress(raw[41:-12])) == 17 * (1 + math.ceil(300 / 8))
    assert image_size_from_base64(png_base64(300, 17)) == (300, 17)


@pytest.mark.parametrize(
    ("model", "width", "height", "detail", "expected"),
    [
        # gpt-4o: 85 + 170 per 512-px tile (OpenAI's documented examples).
        ("gpt-4o", 1024, 1024, "high", 85 + 170 * 4),
        ("gpt-4o", 2048, 4096, "high", 85 + 170 * 6),
        ("gpt-4o", 500, 500, None, 85 + 170),
        ("gpt-4o", 4096, 8192, "low", 85),
        # gpt-4o-mini: same tiles, 2,833 + 5,667 per tile.
        ("gpt-4o-mini", 1024, 1024, "high", 2833 + 5667 * 4),
        ("gpt-4o-mini", 4096, 4096, "low", 2833),
        # Patch models: 32-px patches (capped at 1536) times the model's factor;
        # detail does not change the cost.
        ("gpt-4.1-mini", 1024, 1024, "low", math.ceil(1024 * 1.62)),
        ("gpt-4.1-mini", 1800, 2400, None, math.ceil(1452 * 1.62)),
        ("gpt-4.1-nano", 1024, 1024, "high", math.ceil(1024 * 2.46)),
        ("o4-mini", 1024, 1024, None, math.ceil(1024 * 1.72)),
        ("o4-mini", 100, 50, None, math.ceil(4 * 2 * 1.72)),
    ],
)
def test_openai_image_cost_follows_the_family_formula(
    estimation: EstimationService, model: str, width: int, height: int, detail: str, expected: int
) -> None:
    cost, counted = _image_cost(estimation, model, png_data_url(width, height), detail)
    assert cost == expected
    assert counted.exact, counted.estimated_parts


@pytest.mark.parametrize(("model", "base"), [("gpt-4o", 85), ("gpt-4o-mini", 2833)])
def test_detail_low_url_costs_the_fixed_base_and_stays_exact(
    estimation: EstimationService, model: str, base: int
) -> None:
    cost, counted = _image_cost(estimation, model, "https://example.com/cat.png", "low")
    assert cost == base
    assert counted.exact


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini"])
def test_url_image_of_unknown_size_is_the_default_and_not_exact(
    estimation: EstimationService, model: str
) -> None:
    cost, counted = _image_cost(estimation, model, "https://example.com/cat.png", "high")
    assert cost == DEFAULT_IMAGE_TOKENS
    assert not counted.exact
    assert "images" in counted.estimated_parts


def test_patch_cap_shrinks_large_images() -> None:
    from app.engine.counting.images import patch_count

    assert patch_count(1024, 1024) == 1024
    assert patch_count(1800, 2400) == 1452  # OpenAI's worked example
    assert patch_count(10_000, 10_000) <= 1536


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        (1000, 1000, math.ceil(1000 * 1000 / 750)),
        (200, 200, math.ceil(200 * 200 / 750)),
        # Long edge fitted to 1568, then the area to ~1.15 megapixels.
        (4000, 1000, math.ceil(1568 * 392 / 750)),
    ],
)
def test_anthropic_image_cost_is_pixels_over_750(
    estimation: EstimationService, width: int, height: int, expected: int
) -> None:
    def messages(with_image: bool) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"type": "text", "text": "Describe it."}]
        if with_image:
            source = {
                "type": "base64",
                "media_type": "image/png",
                "data": png_base64(width, height),
            }
            content.append({"type": "image", "source": source})
        return [{"role": "user", "content": content}]

    def count(with_image: bool) -> int:
        history = HistoryInput(
            messages=messages(with_image), model="claude-sonnet-4-5", format="anthropic"
        )
        return estimation.count(history).estimate.tokens

    assert count(True) - count(False) == expected


def test_model_without_image_formula_counts_but_reports_the_guess(
    estimation: EstimationService,
) -> None:
    cost, counted = _image_cost(estimation, "gpt-4", png_data_url(1024, 1024), "high")
    assert cost == 85 + 170 * 4  # the dialect's gpt-4o fallback
    assert "images" in counted.estimated_parts and not counted.exact
