"""Loads the model registry data file (and an operator's extra file) into the engine type.

Besides `models`, a file may define `tools_renderings` (how a model generation lays out
function tools) and `image_rules` (a family's image formula); models refer to them by
name. An extra file overrides or adds entries of each table, entry by entry.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from app.engine.models import (
    CountingFamilies,
    ModelInfo,
    ModelRegistry,
    image_rule_from_mapping,
    model_info_from_mapping,
    tools_rendering_from_mapping,
)


def _table(doc: Any, key: str, source: str) -> dict[str, Any]:
    table = doc.get(key, {}) if isinstance(doc, dict) else None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ValueError(f"{source}: expected {key!r} to be an object of objects")
    return table


def load_registry(extra_file: Path | None = None, fallback_window: int = 128_000) -> ModelRegistry:
    """Built-in entries, overridden entry by entry by `extra_file` when given."""
    builtin = json.loads(resources.files(__package__).joinpath("models.json").read_text("utf-8"))
    docs: list[tuple[Any, str]] = [(builtin, "built-in models.json")]
    if extra_file is not None:
        docs.append((json.loads(extra_file.read_text("utf-8")), str(extra_file)))
    renderings: dict[str, Any] = {}
    image_rules: dict[str, Any] = {}
    for doc, source in docs:
        for name, data in _table(doc, "tools_renderings", source).items():
            renderings[name] = tools_rendering_from_mapping(name, data)
        for name, data in _table(doc, "image_rules", source).items():
            image_rules[name] = image_rule_from_mapping(name, data)
    families = CountingFamilies(tools_renderings=renderings, image_rules=image_rules)
    entries: dict[str, ModelInfo] = {}
    for doc, source in docs:
        models = doc.get("models") if isinstance(doc, dict) else None
        if not isinstance(models, dict):
            raise ValueError(f"{source}: expected an object with a 'models' object")
        for name, data in models.items():
            entries[name] = model_info_from_mapping(name, data, families)
    return ModelRegistry(entries.values(), fallback_window=fallback_window)
