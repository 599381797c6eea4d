"""Model registry: model name or prefix → window, output limit, encoding, thinking levels.

A name resolves, in this order: an operator's alias, the registry's snapshot pointer (a
moving name such as `gpt-3.5-turbo` → the snapshot whose counting rules apply), an exact
entry, an alias rule (gateway names: `openrouter/anthropic/claude-sonnet-4.5`,
`us.anthropic.claude-sonnet-4-5-20250929-v1:0`, … rewritten to a name the registry
knows), the longest matching prefix. The operator's per-model policy is then attached.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from fnmatch import translate
from typing import Any, Protocol

from app.engine.counting.images import ImageCostRule, ImageRuleKind
from app.engine.counting.tools import DEFAULT_RENDERING, ToolsRendering
from app.engine.model_policy import NO_POLICY, ModelPolicy, ModelPrices, PolicyTable
from app.engine.thinking import ThinkingLevel

APPROXIMATE_ENCODING = "o200k_base"
# Alias rules may rewrite a rewritten name again (gateway prefix, then a dotted version).
_MAX_REWRITES = 8
_RESOLVED_CACHE_ENTRIES = 4096


class WindowSource(StrEnum):
    """Where a context window came from (answers say it as `context_window_source`)."""

    REQUEST = "request"  # the request's own context_window
    CONFIG = "config"  # the operator's per-model policy (COMPACTOR_CONFIG)
    UPSTREAM = "upstream"  # the upstream's published model list
    REGISTRY = "registry"  # the model registry, by name or prefix
    ALIAS = "alias"  # the registry, reached through an alias
    FALLBACK = "fallback"  # nothing knows the model: COMPACTOR_FALLBACK_CONTEXT_WINDOW


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
    # False: nothing knows this name; the window is the request's or the fallback.
    known: bool = True
    window_source: WindowSource = WindowSource.REGISTRY
    # Other known tools layouts: where this model's layout is not confirmed for a request,
    # the tools are counted under each and the largest count is taken (never under).
    tools_upper_bounds: tuple[ToolsRendering, ...] = ()
    # The operator's settings for this model (COMPACTOR_CONFIG `[models."pattern"]`).
    policy: ModelPolicy = NO_POLICY
    # The vendor's list prices (the registry's `prices` table, by longest name prefix).
    list_prices: ModelPrices | None = None

    @property
    def prices(self) -> ModelPrices:
        """The prices the ledger applies: the operator's over the registry's list prices."""
        configured = self.policy.prices
        if configured is None:
            return self.list_prices or ModelPrices()
        return configured.over(self.list_prices)


@dataclass(frozen=True, slots=True)
class PublishedModel:
    """What an upstream's model list says about one model name."""

    name: str
    context_window: int | None
    max_output_tokens: int | None = None
    # The model the name stands for, when the list says (LiteLLM's litellm_params.model).
    underlying: str | None = None


class ModelLookup(Protocol):
    """What counting needs of a registry: a name's entry and the unknown-model window."""

    @property
    def fallback_window(self) -> int: ...

    def resolve(self, model: str | None) -> ModelInfo: ...


@dataclass(frozen=True, slots=True)
class AliasRule:
    """A name pattern (a full-match regex) and the name it stands for (`\\1` groups)."""

    pattern: re.Pattern[str]
    to: str

    def apply(self, name: str) -> str | None:
        """The name `name` stands for, or None when the rule does not match it."""
        match = self.pattern.fullmatch(name)
        return match.expand(self.to) if match else None

    @classmethod
    def compile(cls, pattern: str, to: str, where: str = "alias rule") -> AliasRule:
        """A rule from registry data; raises ValueError for a bad regex or template."""
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{where} {pattern!r} is not a regular expression: {exc}") from None
        groups = [int(g) for g in re.findall(r"\\(\d+)", to)]
        if any(g > compiled.groups for g in groups):
            raise ValueError(f"{where} {pattern!r}: {to!r} names a group the pattern lacks")
        return cls(compiled, to)

    @classmethod
    def named(cls, name: str, to: str) -> AliasRule:
        """An operator's alias: an exact name, or a glob (`my-claude-*`) when it has one."""
        if any(c in name for c in "*?["):
            return cls(re.compile(translate(name), re.IGNORECASE), to)
        return cls(re.compile(re.escape(name), re.IGNORECASE), to)


class ModelRegistry:
    """Resolves a model name (see the module docstring for the order) to its entry."""

    def __init__(
        self,
        entries: Iterable[ModelInfo],
        fallback_window: int,
        *,
        snapshots: Mapping[str, str] | None = None,
        alias_rules: Sequence[AliasRule] = (),
        aliases: Sequence[AliasRule] = (),
        policies: PolicyTable | None = None,
        prices: Mapping[str, ModelPrices] | None = None,
    ) -> None:
        self._entries = {e.name: e for e in entries}
        self._prices = {k.lower(): v for k, v in (prices or {}).items()}
        self._price_prefixes = sorted(self._prices, key=len, reverse=True)
        # Longest prefix first, so `gpt-4o-mini` wins over `gpt-4o` and `gpt-4`.
        self._prefixes = sorted(self._entries, key=len, reverse=True)
        self._snapshots = dict(snapshots or {})
        self._operator_aliases = tuple(aliases)
        self._alias_rules = tuple(alias_rules)
        self._policies = policies or PolicyTable()
        self._resolved: dict[str | None, ModelInfo] = {}
        self.fallback_window = fallback_window

    def resolve(self, model: str | None) -> ModelInfo:
        """The entry for `model` with its policy, or an unknown-model entry."""
        cached = self._resolved.get(model)
        if cached is not None:
            return cached
        found = self._find(model, 0) if model else None
        if found is None and model and model != model.lower():
            found = self._find(model.lower(), 0)
        info = self._with_policy(model, found or self._unknown(model))
        listed = self._list_prices(model, info.name)
        if listed is not None:
            info = replace(info, list_prices=listed)
        if len(self._resolved) >= _RESOLVED_CACHE_ENTRIES:
            self._resolved.clear()  # request-chosen names: bounded, never a leak
        self._resolved[model] = info
        return info

    def _find(self, name: str, depth: int) -> ModelInfo | None:
        if depth > _MAX_REWRITES:
            return None
        aliased = self._find_aliased(self._operator_aliases, name, depth)
        if aliased is not None:
            return aliased
        snapshot = self._snapshots.get(name)
        if snapshot is not None and snapshot in self._entries:
            return self._entries[snapshot]
        exact = self._entries.get(name)
        if exact is not None:
            return exact
        aliased = self._find_aliased(self._alias_rules, name, depth)
        if aliased is not None:
            return aliased
        return next((self._entries[p] for p in self._prefixes if name.startswith(p)), None)

    def _find_aliased(self, rules: Sequence[AliasRule], name: str, depth: int) -> ModelInfo | None:
        """The model the first of `rules` that rewrites `name` leads to (followed further
        through aliases, up to the rewrite limit), marked as reached through an alias."""
        for rule in rules:
            target = rule.apply(name)
            if target is not None and target != name:
                hit = self._find(target, depth + 1)
                if hit is not None:
                    return _through_alias(hit)
        return None

    def _list_prices(self, *names: str | None) -> ModelPrices | None:
        """The price entry whose key is the longest prefix of a name (the requested one
        first: `claude-opus-4-6` is priced apart from the `claude-opus-4` entry)."""
        for name in names:
            lowered = (name or "").lower()
            for prefix in self._price_prefixes:
                if prefix and lowered.startswith(prefix):
                    return self._prices[prefix]
        return None

    def _unknown(self, model: str | None) -> ModelInfo:
        return ModelInfo(
            name=model or "",
            provider="unknown",
            context_window=None,
            max_output_tokens=None,
            encoding=APPROXIMATE_ENCODING,
            exact=False,
            known=False,
            window_source=WindowSource.FALLBACK,
        )

    def _with_policy(self, requested: str | None, info: ModelInfo) -> ModelInfo:
        if not self._policies:
            return info
        policy = self._policies.policy_for(requested, info.name)
        if policy is NO_POLICY:
            return info
        if policy.context_window is not None:
            info = replace(
                info,
                context_window=policy.context_window,
                window_source=WindowSource.CONFIG,
                known=True,
            )
        return replace(info, policy=policy)

    def __len__(self) -> int:
        return len(self._entries)


def _through_alias(info: ModelInfo) -> ModelInfo:
    if info.window_source is WindowSource.REGISTRY:
        return replace(info, window_source=WindowSource.ALIAS)
    return info


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


def prices_from_mapping(name: str, data: Mapping[str, Any]) -> ModelPrices:
    """One `prices` entry (US dollars per million tokens); raises ValueError if bad."""
    known = ("input", "cache_write", "cache_read", "output", "cache_write_1h")
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"prices {name!r}: unknown keys {unknown} (known: {', '.join(known)})")
    values: dict[str, float] = {}
    for key in known:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"prices {name!r}: {key} must be a number >= 0")
        values[key] = float(value)
    return ModelPrices(**values)


def _lookup(table: Mapping[str, Any], key: Any, model: str, field_name: str) -> Any:
    if not isinstance(key, str) or key not in table:
        known = ", ".join(sorted(table)) or "none defined"
        raise ValueError(f"model {model!r}: {field_name} {key!r} is not defined (known: {known})")
    return table[key]
