"""The layering contracts cover every module they are meant to: a wire-format or
vendor-API module added later is kept out of the engine, services and API by the
import-linter contract without anyone remembering to list it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What engine, services and API may import of the formats: the protocols and registries.
SEAMS = {"protocol", "registry", "__init__"}


def _contract(name_start: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (found,) = [c for c in contracts if c["name"].startswith(name_start)]
    return found


def test_every_format_and_vendor_api_module_is_behind_the_contract() -> None:
    contract = _contract("Engine, services and the API see wire formats")
    forbidden = set(contract["forbidden_modules"])  # type: ignore[call-overload]
    modules = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "app" / "formats").rglob("*.py")
        if path.stem not in SEAMS
    }
    assert modules - forbidden == set()
    assert {"app.engine", "app.services", "app.api"} <= set(contract["source_modules"])  # type: ignore[call-overload]


def test_no_first_party_folder_is_named_vendor() -> None:
    # Structure tools, `duplicates` and GitHub Linguist skip `vendor/` folders.
    assert not [p for p in (ROOT / "app").rglob("vendor") if p.is_dir()]
