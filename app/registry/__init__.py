"""Loads the model registry data file (and an operator's extra file) into the engine type.

Besides `models`, a file may define `tools_renderings` (how a model generation lays out
function tools), `image_rules` (a family's image formula), `snapshots` (a moving model
name → the snapshot whose counting rules apply) and `alias_rules` (gateway names rewritten
to names the registry knows); models refer to renderings and image rules by name. An
extra file overrides or adds entries of each table, entry by entry (its alias rules are
tried before the built-in ones).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from app.engine.model_policy import ModelPolicy, ModelPrices, PolicyTable
from app.engine.models import (
    AliasRule,
    CountingFamilies,
    ModelInfo,
    ModelRegistry,
    image_rule_from_mapping,
    model_info_from_mapping,
    prices_from_mapping,
    tools_rendering_from_mapping,
)


def _table(doc: Any, key: str, source: str) -> dict[str, Any]:
    table = doc.get(key, {}) if isinstance(doc, dict) else None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ValueError(f"{source}: expected {key!r} to be an object of objects")
    return table


def _snapshots(doc: Any, source: str) -> dict[str, str]:
    table = doc.get("snapshots", {}) if isinstance(doc, dict) else None
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise ValueError(f"{source}: expected 'snapshots' to map model names to model names")
    return table


def _alias_rules(doc: Any, source: str) -> list[AliasRule]:
    rules = doc.get("alias_rules", []) if isinstance(doc, dict) else None
    if not isinstance(rules, list):
        raise ValueError(f"{source}: expected 'alias_rules' to be a list")
    compiled = []
    for i, rule in enumerate(rules):
        match, to = (rule.get("match"), rule.get("to")) if isinstance(rule, dict) else (None, None)
        if not isinstance(match, str) or not isinstance(to, str):
            raise ValueError(f"{source}: alias_rules[{i}] needs a 'match' regex and a 'to' name")
        compiled.append(AliasRule.compile(match, to, f"{source}: alias_rules[{i}]"))
    return compiled


def load_registry(
    extra_file: Path | None = None,
    fallback_window: int = 128_000,
    *,
    aliases: Mapping[str, str] | None = None,
    policies: Mapping[str, ModelPolicy] | None = None,
) -> ModelRegistry:
    """Built-in entries, overridden entry by entry by `extra_file` when given; `aliases`
    (name or glob → model) and `policies` (glob → policy) are the operator's."""
    builtin = json.loads(resources.files(__package__).joinpath("models.json").read_text("utf-8"))
    docs: list[tuple[Any, str]] = [(builtin, "built-in models.json")]
    if extra_file is not None:
        docs.append((json.loads(extra_file.read_text("utf-8")), str(extra_file)))
    renderings: dict[str, Any] = {}
    image_rules: dict[str, Any] = {}
    snapshots: dict[str, str] = {}
    alias_rules: list[AliasRule] = []
    prices: dict[str, ModelPrices] = {}
    for doc, source in docs:
        for name, data in _table(doc, "prices", source).items():
            prices[name] = prices_from_mapping(name, data)
        for name, data in _table(doc, "tools_renderings", source).items():
            renderings[name] = tools_rendering_from_mapping(name, data)
        for name, data in _table(doc, "image_rules", source).items():
            image_rules[name] = image_rule_from_mapping(name, data)
        snapshots.update(_snapshots(doc, source))
        alias_rules[:0] = _alias_rules(doc, source)
    families = CountingFamilies(tools_renderings=renderings, image_rules=image_rules)
    entries: dict[str, ModelInfo] = {}
    for doc, source in docs:
        models = doc.get("models") if isinstance(doc, dict) else None
        if not isinstance(models, dict):
            raise ValueError(f"{source}: expected an object with a 'models' object")
        for name, data in models.items():
            entries[name] = model_info_from_mapping(name, data, families)
    for name, target in snapshots.items():
        if target not in entries:
            raise ValueError(f"snapshots: {name!r} points to {target!r}, which is not a model")
    layouts = tuple(renderings.values())
    return ModelRegistry(
        (_with_upper_bounds(e, layouts) for e in entries.values()),
        fallback_window=fallback_window,
        snapshots=snapshots,
        alias_rules=alias_rules,
        aliases=[AliasRule.named(name, to) for name, to in (aliases or {}).items()],
        policies=PolicyTable(policies),
        prices=prices,
    )


def _with_upper_bounds(entry: ModelInfo, layouts: tuple[Any, ...]) -> ModelInfo:
    others = tuple(layout for layout in layouts if layout != entry.tools_rendering)
    return replace(entry, tools_upper_bounds=others)
