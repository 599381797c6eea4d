"""The `compactor` command: estimate table, compact to a file, openapi, migrate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import app
from tests.conftest import AUTOCOMPACTED_ANTHROPIC, CLAUDE_CODE

runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPACTOR_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")


def test_estimate_prints_a_readable_breakdown() -> None:
    result = runner.invoke(app, ["estimate", str(AUTOCOMPACTED_ANTHROPIC)])
    assert result.exit_code == 0, result.output
    assert "169,704" in result.output
    assert "167,232" in result.output
    assert "should compact  yes" in result.output


def test_estimate_json_is_the_http_answer() -> None:
    result = runner.invoke(app, ["estimate", str(AUTOCOMPACTED_ANTHROPIC), "--json"])
    assert json.loads(result.output)["tokens"] == 169_704


def test_compact_writes_the_answer_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "compacted.json"
    source = CLAUDE_CODE / "tool_heavy.anthropic.json"
    result = runner.invoke(
        app, ["compact", str(source), "--force", "--keep-recent-tokens", "500", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(out.read_text())
    assert answer["compacted"] and answer["tokens_after"] < answer["tokens_before"]
    assert answer["format"] == "anthropic"


def test_a_file_that_is_not_a_history_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"nothing": 1}')
    result = runner.invoke(app, ["estimate", str(bad)])
    assert result.exit_code != 0
    assert "messages" in result.output


def test_openapi_and_migrate_commands(tmp_path: Path) -> None:
    out = tmp_path / "openapi.json"
    assert runner.invoke(app, ["openapi", "-o", str(out)]).exit_code == 0
    assert "/estimate" in json.loads(out.read_text())["paths"]
    migrated = runner.invoke(app, ["migrate"])
    assert migrated.exit_code == 0, migrated.output
    assert "head" in migrated.output


def test_compact_with_a_model_summarizer_reports_each_chunk_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.fake_providers import OpenAIFake

    models_file = tmp_path / "models.json"
    tiny = {"provider": "openai", "context_window": 6_000, "max_output_tokens": 1_000}
    models_file.write_text(json.dumps({"models": {"tiny-summarizer": tiny}}))
    source = tmp_path / "history.json"
    messages = [
        {"role": "user", "content": f"Question {i}: " + " ".join(f"w{i}x{j}" for j in range(300))}
        for i in range(24)
    ]
    source.write_text(json.dumps({"messages": messages, "reserve_tokens": 2_000}))
    with OpenAIFake() as fake:
        for name, value in {
            "SUMMARIZER": "openai",
            "SUMMARIZER_BASE_URL": f"{fake.base_url}/v1",
            "SUMMARIZER_MODEL": "tiny-summarizer",
            "SUMMARIZER_API_KEY": "sk-test",
            "MODELS_FILE": str(models_file),
        }.items():
            monkeypatch.setenv(f"COMPACTOR_{name}", value)
        out = tmp_path / "compacted.json"
        result = runner.invoke(
            app, ["compact", str(source), "--force", "--keep-recent-tokens", "500", "-o", str(out)]
        )
        calls = len(fake.received)
    assert result.exit_code == 0, result.output
    assert calls >= 2
    # Not a terminal: one plain line per step, from none folded to all of them.
    lines = [line for line in result.stderr.splitlines() if line.startswith("summarizing:")]
    assert lines == [f"summarizing: {i}/{calls} chunks folded" for i in range(calls + 1)]
    assert json.loads(out.read_text())["compacted"] is True
