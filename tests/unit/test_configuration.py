"""One configuration file, the environment over it, and no setting silently ignored
(issue 26.2): unknown names refuse to start with the one meant; the documentation table
and the example file are generated from the settings class and checked here."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.configuration import OTHER_VARIABLES, ConfigurationError, env_name
from app.configuration_report import (
    effective_configuration,
    example_toml,
    markdown_table,
    undocumented_settings,
)
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "compactor.example.toml"
# Names the tests and docs spell wrong on purpose (to show they are refused).
MISSPELLED_ON_PURPOSE = {"COMPACTOR_FALBACK_CONTEXT_WINDOW", "COMPACTOR_NOT_A_SETTING"}


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "compactor.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_setting_is_documented_and_the_table_is_current() -> None:
    assert undocumented_settings() == []
    documented = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert documented == markdown_table(), (
        "docs/configuration.md is stale: run `compactor config --markdown > docs/configuration.md`"
    )
    for name in Settings.model_fields:
        assert f"| `{env_name(name)}` |" in documented


def test_the_example_file_is_current_and_loads() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text == example_toml(), (
        "deploy/compactor.example.toml is stale: run "
        "`compactor config --example > deploy/compactor.example.toml`"
    )
    # As shipped (everything commented) it changes nothing.
    shipped = Settings(config=EXAMPLE).model_dump(exclude={"config"})
    assert shipped == Settings().model_dump(exclude={"config"})


def test_every_key_of_the_example_file_is_valid_when_uncommented(tmp_path: Path) -> None:
    keys = re.compile(r'^# ((?:[a-z_]+|"[^"]+") = .+|\[[^\]]+\])$')
    lines = [keys.sub(r"\1", line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    uncommented = _config(tmp_path, "\n".join(lines))
    settings = Settings(config=uncommented)
    for name in Settings.model_fields:
        if name != "config":
            assert f"\n{name} = " in "\n" + uncommented.read_text() or name in (
                "models",
                "model_aliases",
            ), f"{name} is missing from deploy/compactor.example.toml"
    assert settings.summarizer_model == "gpt-4o-mini"
    policy = settings.model_policies()["claude-sonnet-4-6*"]
    assert policy.context_window == 1_000_000 and policy.prices is not None
    assert policy.prices.cache_read == 0.3
    assert settings.model_aliases == {"my-claude": "claude-sonnet-4-6", "team-gpt-*": "gpt-4.1"}


def test_the_environment_overrides_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _config(
        tmp_path,
        'fallback_context_window = 64000\nstate_key = "from-the-file"\n'
        '[models."claude-*"]\nkeep_recent_tokens = 30000\n',
    )
    monkeypatch.setenv("COMPACTOR_CONFIG", str(path))
    monkeypatch.setenv("COMPACTOR_FALLBACK_CONTEXT_WINDOW", "32000")
    settings = Settings()
    assert settings.fallback_context_window == 32_000
    assert settings.models["claude-*"].keep_recent_tokens == 30_000
    file, rows = effective_configuration(settings, os.environ)
    sources = {row.variable: (row.source, row.value) for row in rows}
    assert file == path
    assert sources["COMPACTOR_FALLBACK_CONTEXT_WINDOW"] == ("env", "32000")
    assert sources["COMPACTOR_STATE_KEY"] == ("file", "********")
    assert sources["COMPACTOR_MODELS"][0] == "file"
    assert sources["COMPACTOR_IMAGE_TOKENS"] == ("default", "1200")


def test_a_misspelled_variable_refuses_to_start_with_the_one_meant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COMPACTOR_FALBACK_CONTEXT_WINDOW", "1000")
    with pytest.raises(ConfigurationError) as caught:
        Settings()
    assert (
        "COMPACTOR_FALBACK_CONTEXT_WINDOW (did you mean COMPACTOR_FALLBACK_CONTEXT_WINDOW?)"
        in str(caught.value)
    )


def test_variables_that_are_not_settings_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTHER_VARIABLES:
        monkeypatch.setenv(name, "x")
    Settings()


def test_a_misspelled_file_key_refuses_to_start(tmp_path: Path) -> None:
    path = _config(tmp_path, "fallback_contex_window = 1000\n")
    with pytest.raises(ConfigurationError, match="'fallback_contex_window' \\(did you mean "):
        Settings(config=path)


def test_a_misspelled_policy_key_names_the_one_meant(tmp_path: Path) -> None:
    path = _config(tmp_path, '[models."claude-*"]\nkeep_recnt_tokens = 1000\n')
    with pytest.raises(ValidationError, match="did you mean keep_recent_tokens"):
        Settings(config=path)
    prices = _config(tmp_path, '[models."x".prices]\ncached_read = 0.3\n')
    with pytest.raises(ValidationError, match="did you mean cache_read"):
        Settings(config=prices)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("fallback_context_window = \n", "not valid TOML"),
        ("config = 'other.toml'\n", "unknown setting 'config'"),
    ],
)
def test_a_file_that_cannot_be_used_is_refused(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        Settings(config=_config(tmp_path, text))


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"COMPACTOR_CONFIG: cannot read .*missing\.toml"):
        Settings(config=tmp_path / "missing.toml")


def test_every_compactor_variable_the_repository_uses_is_a_setting_or_listed() -> None:
    """A variable the code or the deployment files set but nothing reads would be refused
    at start: each must be a setting or one of OTHER_VARIABLES."""
    known = {env_name(name) for name in Settings.model_fields} | set(OTHER_VARIABLES)
    folders = ["app", "bench", "clients", "deploy", "docs", "examples", "scripts", "tests"]
    files = [ROOT / "docker-compose.yml", ROOT / "Dockerfile", ROOT / "README.md"]
    for folder in folders:
        files += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file()
            and p.suffix in {".py", ".md", ".toml", ".yml", ".yaml", ".mjs", ".ts", ".sh", ""}
            and "node_modules" not in p.parts
        ]
    unknown: dict[str, str] = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for name in re.findall(r"\bCOMPACTOR_[A-Z0-9_]*[A-Z0-9]\b", text):
            if name not in known and name not in MISSPELLED_ON_PURPOSE:
                unknown.setdefault(name, str(path.relative_to(ROOT)))
    assert unknown == {}
