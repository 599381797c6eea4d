"""`compactor config` and the first-run answers of the command line (issue 26.2, 26.3):
one line for a mistake, the effective configuration with where each value came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _compactor(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a child process, with only the given COMPACTOR_*."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("COMPACTOR_")}
    return subprocess.run(
        [sys.executable, "-c", "from app.cli import main; main()", *args],
        env={**clean, "COMPACTOR_DATABASE_URL": f"sqlite:///{cwd / 'c.db'}", **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_estimate_of_a_missing_file_is_one_line(tmp_path: Path) -> None:
    """It was a 6-line usage box."""
    line = _one_line(_compactor("estimate", "missing.json", env={}, cwd=tmp_path))
    assert line == "error: cannot read missing.json: No such file or directory"


@pytest.mark.parametrize("command", ["serve", "config", "estimate"])
def test_a_misspelled_variable_refuses_to_start_in_one_line(tmp_path: Path, command: str) -> None:
    history = tmp_path / "h.json"
    history.write_text('{"messages": [{"role": "user", "content": "hi"}]}')
    args = [command, str(history)] if command == "estimate" else [command]
    env = {"COMPACTOR_FALBACK_CONTEXT_WINDOW": "1000"}
    line = _one_line(_compactor(*args, env=env, cwd=tmp_path))
    assert (
        "COMPACTOR_FALBACK_CONTEXT_WINDOW (did you mean COMPACTOR_FALLBACK_CONTEXT_WINDOW?)" in line
    )


def test_an_unknown_summarizer_names_the_choices_in_plain_words(tmp_path: Path) -> None:
    line = _one_line(_compactor("serve", env={"COMPACTOR_SUMMARIZER": "olama"}, cwd=tmp_path))
    assert line == (
        "error: configuration error: COMPACTOR_SUMMARIZER: unknown summarizer 'olama' "
        "(did you mean ollama?); choose one of: extractive, openai, azure, openrouter, "
        "ollama, vllm, openai-compatible, anthropic"
    )


def test_config_prints_each_value_and_where_it_came_from(tmp_path: Path) -> None:
    config = tmp_path / "compactor.toml"
    config.write_text(
        'fallback_context_window = 64000\nsummarizer_api_key = "sk-from-the-file"\n'
        'image_tokens = 900\n[models."claude-*"]\nkeep_recent_tokens = 30000\n'
    )
    env = {
        "COMPACTOR_CONFIG": str(config),
        "COMPACTOR_IMAGE_TOKENS": "800",
        "COMPACTOR_DATABASE_URL": "postgresql://app:hunter22@db:5432/compactor",
    }
    result = _compactor("config", "--json", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    rows = {row["variable"]: (row["source"], row["value"]) for row in doc["settings"]}
    assert doc["file"] == str(config)
    assert rows["COMPACTOR_FALLBACK_CONTEXT_WINDOW"] == ("file", "64000")
    assert rows["COMPACTOR_IMAGE_TOKENS"] == ("env", "800")
    assert rows["COMPACTOR_SUMMARIZER_API_KEY"] == ("file", "********")
    assert rows["COMPACTOR_DATABASE_URL"] == ("env", "postgresql://app:********@db:5432/compactor")
    assert rows["COMPACTOR_MODELS"] == ("file", '{"claude-*": {"keep_recent_tokens": 30000}}')
    assert rows["COMPACTOR_STATE_KEY"] == ("default", "(unset)")
    text = _compactor("config", env=env, cwd=tmp_path).stdout
    assert "sk-from-the-file" not in text and "hunter22" not in text
    assert f"configuration file: {config} (COMPACTOR_CONFIG)" in text


def test_config_markdown_is_the_documentation(tmp_path: Path) -> None:
    result = _compactor("config", "--markdown", env={}, cwd=tmp_path)
    documented = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
    assert result.stdout == documented.read_text(encoding="utf-8")
