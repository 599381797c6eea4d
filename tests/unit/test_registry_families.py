"""Registry data for counting: image formulas, tools layouts, the correction factor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.counting.count_cache import TokenCountCache
from app.registry import load_registry
from app.services.estimation import EstimationService
from app.services.history import HistoryInput
from app.tokenizers.bpe import TokenizerRegistry
from tests.pngs import png_data_url

PROSE = [{"role": "user", "content": "Summarize the design of the cache in two sentences. " * 20}]


def _extra(tmp_path: Path, doc: dict[str, object]) -> Path:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(doc), "utf-8")
    return path


def _service(tokenizers: TokenizerRegistry, extra: Path | None = None) -> EstimationService:
    return EstimationService(tokenizers, load_registry(extra), TokenCountCache(), 1200)


def test_token_factor_scales_approximate_counts_only(
    tokenizers: TokenizerRegistry, tmp_path: Path
) -> None:
    extra = _extra(
        tmp_path,
        {
            "models": {
                "claude-sonnet-4-5": {
                    "provider": "anthropic",
                    "context_window": 200000,
                    "token_factor": 1.5,
                },
                "gpt-4o": {"provider": "openai", "context_window": 128000, "token_factor": 1.5},
            }
        },
    )
    plain, scaled = _service(tokenizers), _service(tokenizers, extra)

    def tokens(service: EstimationService, model: str) -> int:
        return service.count(HistoryInput(messages=PROSE, model=model)).estimate.tokens

    base = tokens(plain, "claude-sonnet-4-5")
    assert tokens(scaled, "claude-sonnet-4-5") == pytest.approx(base * 1.5, rel=0.02)
    # gpt-4o's count is exact: a factor would only make it wrong.
    assert tokens(scaled, "gpt-4o") == tokens(plain, "gpt-4o")


def test_an_extra_file_adds_an_image_family(tokenizers: TokenizerRegistry, tmp_path: Path) -> None:
    extra = _extra(
        tmp_path,
        {
            "image_rules": {"patches-x2": {"kind": "patches", "multiplier": 2}},
            "models": {"gpt-new": {"provider": "openai", "images": "patches-x2"}},
        },
    )
    service = _service(tokenizers, extra)

    def count(with_image: bool) -> int:
        parts: list[dict[str, object]] = [{"type": "text", "text": "look"}]
        if with_image:
            parts.append({"type": "image_url", "image_url": {"url": png_data_url(64, 64)}})
        history = HistoryInput(messages=[{"role": "user", "content": parts}], model="gpt-new")
        return service.count(history).estimate.tokens

    assert count(True) - count(False) == 2 * 4


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"models": {"m": {"images": "nope"}}}, "images 'nope' is not defined"),
        ({"models": {"m": {"tools_rendering": "nope"}}}, "tools_rendering 'nope'"),
        ({"image_rules": {"r": {"kind": "hexagons"}}, "models": {}}, "kind must be one of"),
        ({"models": {"m": {"token_factor": 0}}}, "token_factor"),
    ],
)
def test_bad_registry_entries_say_what_to_fix(
    tmp_path: Path, doc: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        load_registry(_extra(tmp_path, doc))
