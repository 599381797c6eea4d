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
