"""The client wheel: its own distribution, httpx its only requirement, typed, no server code."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_the_client_only_and_requires_httpx_alone(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path), str(ROOT / "clients" / "python")],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    wheel = next(tmp_path.glob("context_compactor_client-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    packages = {name.split("/")[0] for name in names if not name.endswith("/")}
    assert {p for p in packages if not p.endswith(".dist-info")} == {"context_compactor"}
    assert "context_compactor/py.typed" in names
    assert {
        "context_compactor/integrations/langchain.py",
        "context_compactor/integrations/pydantic_ai.py",
        "context_compactor/integrations/openai_agents.py",
        "context_compactor/integrations/litellm.py",
    } <= set(names)
    assert metadata["Name"] == "context-compactor-client"
    requires = metadata.get_all("Requires-Dist") or []
    unconditional = [r for r in requires if "extra ==" not in r]
    assert unconditional == ["httpx>=0.27"]
    assert set(metadata.get_all("Provides-Extra") or []) == {
        "langchain",
        "pydantic-ai",
        "openai-agents",
        "litellm",
    }
