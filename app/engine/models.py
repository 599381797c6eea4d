"""Model registry: model name or prefix → window, output limit, encoding, thinking levels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.engine.counting.images import ImageCostRule, ImageRuleKind
from app.engine.counting.tools import DEFAULT_RENDERING, ToolsRendering
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
    # How the family lays out function tools (OpenAI's rendering changed over time).
    tools_rendering: ToolsRendering = DEFAULT_RENDERING
    # The family's image formula; None: unknown, images are counted by a default.
    image_rule: ImageCostRule | None = None
    # Correction applied to approximate counts (e.g. o200k for Claude); 1.0 = none.
    token_factor: float = 1.0
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


@dataclass(frozen=True, slots=True)
class CountingFamilies:
    """The registry's named tools layouts and image formulas, referenced by models."""

    tools_renderings: Mapping[str, ToolsRendering]
    image_rules: Mapping[str, ImageCostRule]


def tools_rendering_from_mapping(name: str, data: Mapping[str, Any]) -> ToolsRendering:
    """One `tools_renderings` entry; raises ValueError if bad."""
    indent = data.get("nested_indent", 0)
    if not isinstance(indent, int) or indent < 0:
        raise ValueError(f"tools rendering {name!r}: nested_indent must be a non-negative integer")
    flags = {}
    for key in ("nested_descriptions", "exact_nested", "exact_undescribed"):
        value = data.get(key, getattr(DEFAULT_RENDERING, key))
        if not isinstance(value, bool):
            raise ValueError(f"tools rendering {name!r}: {key} must be true or false")
        flags[key] = value
    return ToolsRendering(name=name, nested_indent=indent, **flags)


def image_rule_from_mapping(name: str, data: Mapping[str, Any]) -> ImageCostRule:
    """One `image_rules` entry; raises ValueError if bad."""
    try:
        kind = ImageRuleKind(str(data.get("kind")))
    except ValueError:
        kinds = ", ".join(k.value for k in ImageRuleKind)
        raise ValueError(f"image rule {name!r}: kind must be one of {kinds}") from None
    numbers: dict[str, Any] = {}
    for key in (
        "base",
        "per_tile",
        "max_patches",
        "divisor",
        "max_long_edge",
        "max_pixels",
        "tile_size",
        "small_edge",
    ):
        if key in data:
            value = data[key]
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"image rule {name!r}: {key} must be a positive integer")
            numbers[key] = value
    if "multiplier" in data:
        numbers["multiplier"] = _positive_number(data["multiplier"], f"image rule {name!r}")
    return ImageCostRule(kind=kind, name=name, **numbers)


def _positive_number(value: Any, where: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{where}: must be a positive number, got {value!r}")
    return float(value)


def model_info_from_mapping(
    name: str, data: Mapping[str, Any], families: CountingFamilies | None = None
) -> ModelInfo:
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
    families = families or CountingFamilies(tools_renderings={}, image_rules={})
    rendering = DEFAULT_RENDERING
    if "tools_rendering" in data:
        rendering = _lookup(
            families.tools_renderings, data["tools_rendering"], name, "tools_rendering"
        )
    image_rule = None
    if data.get("images") is not None:
        image_rule = _lookup(families.image_rules, data["images"], name, "images")
    factor = _positive_number(data.get("token_factor", 1.0), f"model {name!r}: token_factor")
    return ModelInfo(
        name=name,
        provider=provider,
        context_window=window,
        max_output_tokens=max_out,
        encoding=encoding,
        exact=exact,
        thinking_levels=levels,
        tools_rendering=rendering,
        image_rule=image_rule,
        token_factor=factor,
    )


def _lookup(table: Mapping[str, Any], key: Any, model: str, field_name: str) -> Any:
    if not isinstance(key, str) or key not in table:
        known = ", ".join(sorted(table)) or "none defined"
        raise ValueError(f"model {model!r}: {field_name} {key!r} is not defined (known: {known})")
    return table[key]
