"""Model registry: model name or prefix → window, output limit, encoding, thinking levels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.engine.thinking import ThinkingLevel

APPROXIMATE_ENCODING = "o200k_base"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the registry knows about one model (or model family, by prefix)."""

    name: str
    provider: str
    context_window: int | None
    max_output_tokens: int | None
    encoding: str
    exact: bool
    thinking_levels: tuple[ThinkingLevel, ...] = ()
    # OpenAI chat accounting family: tools counting constants differ per family.
    tools_family: str = "gpt-4o"
    known: bool = True


class ModelRegistry:
    """Resolves a model name: exact entry first, then the longest matching prefix."""

    def __init__(self, entries: Iterable[ModelInfo], fallback_window: int) -> None:
        self._entries = {e.name: e for e in entries}
        # Longest prefix first, so `gpt-4o-mini` wins over `gpt-4o` and `gpt-4`.
        self._prefixes = sorted(self._entries, key=len, reverse=True)
        self.fallback_window = fallback_window

    def resolve(self, model: str | None) -> ModelInfo:
        """The entry for `model`, or an unknown-model entry with the fallback window."""
        if model:
            found = self._entries.get(model)
            if found is None:
                found = next(
                    (self._entries[p] for p in self._prefixes if model.startswith(p)), None
                )
            if found is not None:
                return found
        return ModelInfo(
            name=model or "",
            provider="unknown",
            context_window=None,
            max_output_tokens=None,
            encoding=APPROXIMATE_ENCODING,
            exact=False,
            known=False,
        )

    def __len__(self) -> int:
        return len(self._entries)


def model_info_from_mapping(name: str, data: Mapping[str, Any]) -> ModelInfo:
    """Builds one entry from the registry file's JSON object; raises ValueError if bad."""
    provider = str(data.get("provider", "unknown"))
    encoding = str(data.get("encoding", APPROXIMATE_ENCODING))
    window = data.get("context_window")
    max_out = data.get("max_output_tokens")
    for label, value in (("context_window", window), ("max_output_tokens", max_out)):
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise ValueError(f"model {name!r}: {label} must be a positive integer")
    levels = tuple(ThinkingLevel(level) for level in data.get("thinking_levels", ()))
    exact = bool(data.get("exact", provider == "openai"))
    return ModelInfo(
        name=name,
        provider=provider,
        context_window=window,
        max_output_tokens=max_out,
        encoding=encoding,
        exact=exact,
        thinking_levels=levels,
        tools_family=str(data.get("tools_family", "gpt-4o")),
    )
