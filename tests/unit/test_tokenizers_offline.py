"""Exact tokenizers load from installed packages with the network cut off."""

from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.tokenizers.offline_ranks import ENCODINGS, RanksFileError, load_ranks, ranks_path

NO_NETWORK_SCRIPT = textwrap.dedent(
    """
    import os, socket
    os.environ.pop("TIKTOKEN_CACHE_DIR", None)
    os.environ["DATA_GYM_CACHE_DIR"] = "/nonexistent"
    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")
    socket.socket.connect = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    from app.tokenizers.bpe import TokenizerRegistry
    registry = TokenizerRegistry()
    registry.warm()
    for name in ("o200k_base", "cl100k_base"):
        print(registry.get(name).count("hello world"))
    """
)


def test_encodings_build_with_no_network_at_all(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", NO_NETWORK_SCRIPT],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "2"]


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_ranks_files_are_found_in_installed_packages(name: str) -> None:
    assert ranks_path(ENCODINGS[name]).is_file()


def test_a_tampered_ranks_file_is_refused(tmp_path: Path) -> None:
    spec = ENCODINGS["cl100k_base"]
    original = gzip.decompress(ranks_path(spec).read_bytes())
    tampered = tmp_path / "cl100k_base.tiktoken.gz"
    tampered.write_bytes(gzip.compress(original.replace(b" 0\n", b" 1\n", 1)))
    with pytest.raises(RanksFileError, match="sha256"):
        load_ranks(spec, tampered)


def test_a_missing_ranks_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RanksFileError, match="cannot read"):
        load_ranks(ENCODINGS["o200k_base"], tmp_path / "absent.tiktoken.gz")


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_fast_counter_agrees_with_tiktoken_on_real_transcript_texts(name: str) -> None:
    from app.engine.counting.accounting import CountingRules, message_cost
    from app.formats import anthropic
    from app.formats.registry import FORMATS
    from app.tokenizers.bpe import TokenizerRegistry
    from tests.conftest import BIG_ANTHROPIC, load_json

    tokenizer = TokenizerRegistry().get(name)
    assert getattr(tokenizer, "uses_fast_counter", False), "bpe-openai counter not in use"
    conversation = anthropic.parse(load_json(BIG_ANTHROPIC)["messages"])
    rules = CountingRules(dialect=FORMATS.get("anthropic").dialect)
    texts = [t for m in conversation.messages for t in message_cost(m, rules).texts]
    mismatches = [
        t[:80]
        for t in texts
        if tokenizer.count(t) != tokenizer.reference_count(t)  # type: ignore[union-attr]
    ]
    assert mismatches == []


def test_without_the_fast_counter_counts_are_the_same() -> None:
    from app.tokenizers.bpe import PROBES, TokenizerRegistry

    fast = TokenizerRegistry().get("o200k_base")
    plain = TokenizerRegistry(use_fast_counter=False).get("o200k_base")
    assert not getattr(plain, "uses_fast_counter", True)
    assert [fast.count(p) for p in PROBES] == [plain.count(p) for p in PROBES]
