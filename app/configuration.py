"""Where settings come from besides the defaults: the configuration file (COMPACTOR_CONFIG,
TOML) and the environment, which overrides it. A name nobody reads is refused with the
setting probably meant, so a typo never silently leaves a default in place.

The known names are derived from the Settings class at runtime (a new setting needs no
list updated here); `OTHER_VARIABLES` lists the `COMPACTOR_*` variables that are read
elsewhere and are not settings.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

ENV_PREFIX = "COMPACTOR_"
CONFIG_VARIABLE = "COMPACTOR_CONFIG"

# `COMPACTOR_*` variables that are not settings of the service, and who reads each. Add a
# line here for a new one (docs/configuration.md lists them; the test suite checks it).
OTHER_VARIABLES: Mapping[str, str] = {
    "COMPACTOR_TRACEBACK": "the `compactor` command: show the traceback of an error "
    "instead of one line",
    "COMPACTOR_MIGRATIONS_DIR": "`compactor migrate` and the start-up migration: the "
    "Alembic folder (default: the checkout's `migrations/`, or the wheel's copy)",
    "COMPACTOR_TEST_ALLOWED_HOSTS": "the test suite's network guard: hosts beyond "
    "loopback the tests may reach (a PostgreSQL service in CI, say)",
    "COMPACTOR_URL": "the client examples and the TypeScript client's tests: the service to use",
    "COMPACTOR_KEY": "the client examples: the API key to send",
    "COMPACTOR_BIN": "the TypeScript client's tests: the `compactor` command to start",
}


class ConfigurationError(ValueError):
    """The configuration cannot be used as written; the service refuses to start."""


def env_name(field: str) -> str:
    """The environment variable of a setting (`fallback_context_window` →
    `COMPACTOR_FALLBACK_CONTEXT_WINDOW`)."""
    return ENV_PREFIX + field.upper()


def did_you_mean(name: str, choices: list[str]) -> str:
    """` (did you mean X?)` for the closest of `choices`, or "" when none is close."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def check_environment(settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
    """Refuses a `COMPACTOR_*` variable that is neither a setting nor in OTHER_VARIABLES."""
    settings = [env_name(name) for name in settings_cls.model_fields]
    known = set(settings) | set(OTHER_VARIABLES)
    unknown = sorted(
        name
        for name in environ
        if name.upper().startswith(ENV_PREFIX) and name.upper() not in known
    )
    if not unknown:
        return
    problems = [f"{name}{did_you_mean(name.upper(), settings)}" for name in unknown]
    raise ConfigurationError(
        f"unknown environment variable{'s' if len(unknown) > 1 else ''}: "
        + "; ".join(problems)
        + " — every setting is listed by `compactor config --markdown` (docs/configuration.md)"
    )


def config_path(init_kwargs: Mapping[str, Any], environ: Mapping[str, str]) -> Path | None:
    """The configuration file a Settings construction reads: `config=` or COMPACTOR_CONFIG."""
    given = init_kwargs.get("config")
    if given is None:
        given = environ.get(CONFIG_VARIABLE) or None
    return Path(given) if given is not None else None


def read_config_file(path: Path, settings_cls: type[BaseSettings]) -> dict[str, Any]:
    """The file's settings; refuses an unreadable file, bad TOML and unknown keys."""
    try:
        with path.open("rb") as handle:
            doc = tomllib.load(handle)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigurationError(f"{CONFIG_VARIABLE}: cannot read {path}: {reason}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid TOML: {exc}") from None
    names = [name for name in settings_cls.model_fields if name != "config"]
    unknown = [key for key in doc if key not in names]
    if unknown:
        problems = [f"{key!r}{did_you_mean(key, names)}" for key in unknown]
        raise ConfigurationError(
            f"{path}: unknown setting{'s' if len(unknown) > 1 else ''} "
            + "; ".join(problems)
            + " (keys are setting names in lower case, without COMPACTOR_)"
        )
    return doc


class ConfigFileSource(PydanticBaseSettingsSource):
    """The configuration file as a settings source (below the environment)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self.path = path
        self.values = read_config_file(path, settings_cls) if path is not None else {}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.values)


def environment() -> Mapping[str, str]:
    """The process environment (one place, so tests and `compactor config` agree)."""
    return os.environ
