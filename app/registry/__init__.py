"""Loads the model registry data file (and an operator's extra file) into the engine type."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from app.engine.models import ModelInfo, ModelRegistry, model_info_from_mapping


def _entries(doc: Any, source: str) -> list[ModelInfo]:
    models = doc.get("models") if isinstance(doc, dict) else None
    if not isinstance(models, dict):
        raise ValueError(f"{source}: expected an object with a 'models' object")
    return [model_info_from_mapping(name, data) for name, data in models.items()]


def load_registry(extra_file: Path | None = None, fallback_window: int = 128_000) -> ModelRegistry:
    """Built-in entries, overridden entry by entry by `extra_file` when given."""
    builtin = json.loads(resources.files(__package__).joinpath("models.json").read_text("utf-8"))
    entries = {e.name: e for e in _entries(builtin, "built-in models.json")}
    if extra_file is not None:
        extra = json.loads(extra_file.read_text("utf-8"))
        entries.update({e.name: e for e in _entries(extra, str(extra_file))})
    return ModelRegistry(entries.values(), fallback_window=fallback_window)
