"""Configuration and CLI errors: one clear line on stderr, a non-zero exit, no traceback;
API key configuration that is blank or shared refuses to start (issue 11 items 3, 13, 14)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from app.api.auth import parse_api_keys
from app.cli import app
from app.main import create_app
from app.settings import Settings
from tests.conftest import CLAUDE_CODE
from tests.console import Ran, run_main

runner = CliRunner()


def _compactor(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a child process (no test runner in between): what
    an operator sees, import-time output included. The other cases run `main()` in
    process (tests/console.py): the same code, without an interpreter start each."""
    return subprocess.run(
        [sys.executable, "-c", "from app.cli import main; main()", *args],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line_error(result: subprocess.CompletedProcess[str] | Ran, *fragments: str) -> str:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# --- item 3: API keys ---------------------------------------------------------------------


@pytest.mark.parametrize("spec", [" ", ",,,", " , ", "\n"])
def test_blank_key_configuration_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="holds no tenant:key entry"):
        parse_api_keys(spec)


def test_one_key_for_two_tenants_is_refused() -> None:
    with pytest.raises(ValueError, match="every tenant needs a key of its own"):
        parse_api_keys("a:key-aaaaaaaa,b:key-aaaaaaaa")
    assert parse_api_keys("a:key-aaaaaaaa,a:key-aaaaaaaa") == {"key-aaaaaaaa": "a"}
    assert parse_api_keys(None) == {}


def test_a_keys_file_with_only_a_newline_will_not_start_the_app(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("\n")
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'k.db'}", api_keys_file=keys)
    with pytest.raises(ValueError, match="holds no tenant:key entry"):
        create_app(settings)


def test_an_empty_variable_means_no_keys(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'k.db'}", api_keys="")
    with TestClient(create_app(settings)) as client:
        assert client.get("/sessions").status_code == 200


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"COMPACTOR_API_KEYS": " "}, "holds no tenant:key entry"),
        ({"COMPACTOR_API_KEYS": ",,,"}, "holds no tenant:key entry"),
        ({"COMPACTOR_API_KEYS": "a:short"}, "at least 8 characters"),
        ({"COMPACTOR_API_KEYS": "a:key-aaaaaaaa,b:key-aaaaaaaa"}, "a key of its own"),
        ({"COMPACTOR_MAX_BODY_BYTES": "0"}, "COMPACTOR_MAX_BODY_BYTES"),
        ({"COMPACTOR_DATABASE_URL": "mysql://x/y"}, "unsupported database URL"),
        ({"COMPACTOR_WORKSPACE_ROOTS": "relative/dir"}, "not an absolute path"),
        ({"COMPACTOR_DATABASE_URL": "sqlite:////proc/no/such/dir/c.db"}, "/proc/no"),
        ({"COMPACTOR_MODELS_FILE": "/no/such/models.json"}, "/no/such/models.json"),
    ],
)
def test_serve_refuses_bad_configuration_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    fragment: str,
) -> None:
    result = run_main(monkeypatch, capsys, "serve", "--host", "0.0.0.0", env=env, cwd=tmp_path)
    _one_line_error(result, fragment)


def test_the_real_command_refuses_bad_configuration_in_one_line(tmp_path: Path) -> None:
    env = {"COMPACTOR_API_KEYS": "a:key-aaaaaaaa,b:key-aaaaaaaa"}
    result = _compactor("serve", "--host", "0.0.0.0", env=env, cwd=tmp_path)
    _one_line_error(result, "a key of its own")


# --- item 13: other commands ------------------------------------------------------------


def test_migrate_against_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    env = {"COMPACTOR_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    _one_line_error(_compactor("migrate", env=env, cwd=tmp_path), "database error")


def test_estimate_of_an_invalid_history_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [{"role": "user"}], "keep_recent": 1}')
    env = {"COMPACTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"}
    result = run_main(monkeypatch, capsys, "estimate", str(bad), env=env, cwd=tmp_path)
    _one_line_error(result, "keep_recent")


def test_estimate_in_the_wrong_format_says_so(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.json"
    wrong.write_text(
        '{"format": "anthropic", "messages": [{"role": "user", "content": "hi"},'
        ' {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type":'
        ' "function", "function": {"name": "f", "arguments": "{}"}}]}]}'
    )
    env = {"COMPACTOR_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"}
    line = _one_line_error(_compactor("estimate", str(wrong), env=env, cwd=tmp_path))
    assert "format=anthropic; these messages look like openai" in line


def test_wrong_format_append_to_a_session_says_so(client: TestClient) -> None:
    sid = client.post("/sessions", json={"format": "anthropic"}).json()["id"]
    openai = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "ls"}}],
        },
    ]
    response = client.post(f"/sessions/{sid}/messages", json={"messages": openai})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail.startswith("this session is in anthropic format; these messages look like openai")


# --- item 14: estimate shows the messages and the format ---------------------------------


def test_estimate_prints_a_per_message_table_and_the_detected_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPACTOR_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    result = runner.invoke(app, ["estimate", str(CLAUDE_CODE / "tool_heavy.anthropic.json")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "format          anthropic (detected)" in lines
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["#", "role", "tokens"])
    rows = lines[header + 1 : header + 12]
    assert rows[0].split()[:3] == ["0", "user", "8"]
    assert "[tool_use]" in rows[1] and "[tool_result]" in rows[2]
    no_table = runner.invoke(
        app, ["estimate", "--no-table", str(CLAUDE_CODE / "tool_heavy.anthropic.json")]
    )
    assert "role" not in no_table.output
