"""The README's session-flow and recall snippets run as written, against a real service
(only the base URL is replaced by the test server's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from context_compactor import CompactorClient

from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry
from tests.conftest import migrated_copy
from tests.live_server import live_server

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start : end if end != -1 else None]


@pytest.mark.parametrize(
    ("title", "blocks"),
    [
        ("### The session flow", 1),
        ("## Nothing lost, and you in control", 2),
        ("### Compaction in the background", 1),
    ],
)
def test_the_snippets_run_as_written(
    title: str,
    blocks: int,
    tmp_path: Path,
    migrated_sqlite: Path,
    tokenizers: TokenizerRegistry,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _BLOCK.findall(_section(title).split("\n### ")[0])
    assert len(code) == blocks
    settings = Settings(database_url=migrated_copy(migrated_sqlite, tmp_path))
    with live_server(settings, tokenizers=tokenizers) as url:
        namespace: dict[str, object] = {}
        for block in code:
            exec(compile(block.replace("http://127.0.0.1:8000", url), title, "exec"), namespace)
        # A script's client closes when its process ends; here the test closes it, or its
        # socket is reported unclosed in whichever later test the collector runs in.
        for value in namespace.values():
            if isinstance(value, CompactorClient):
                value.close()
    printed = capsys.readouterr().out
    if title.startswith("### Compaction in the background"):
        assert printed.strip().splitlines()[-1] == "done 1 True"
    elif title.startswith("###"):
        assert printed.strip().splitlines()[-1] == "7"
    else:
        assert "[(5, True)]" in printed and "TANGERINE-4417" in printed
