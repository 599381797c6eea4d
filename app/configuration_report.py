"""What `compactor config` prints: the effective configuration with where each value came
from (secrets masked), and the documentation table of every setting, generated from the
Settings class (docs/configuration.md is this module's `--markdown` output)."""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import httpx
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from app.configuration import (
    CONFIG_VARIABLE,
    OTHER_VARIABLES,
    config_path,
    env_name,
    read_config_file,
)
from app.settings import Settings

MASK = "********"


@dataclass(frozen=True, slots=True)
class ConfigRow:
    """One setting's effective value and where it came from."""

    variable: str
    value: str
    source: Literal["default", "file", "env", "argument"]


def effective_configuration(
    settings: Settings, environ: Mapping[str, str], given: Mapping[str, Any] | None = None
) -> tuple[Path | None, list[ConfigRow]]:
    """The file read (if any) and every setting's value and source; `given` names the
    keyword arguments the settings were built with."""
    path = config_path(given or {}, environ)
    in_file = read_config_file(path, Settings) if path is not None else {}
    upper_env = {name.upper() for name in environ}
    rows = []
    for name in Settings.model_fields:
        variable = env_name(name)
        source: Literal["default", "file", "env", "argument"] = "default"
        if given and name in given:
            source = "argument"
        elif variable in upper_env:
            source = "env"
        elif name in in_file:
            source = "file"
        rows.append(ConfigRow(variable, shown_value(name, getattr(settings, name)), source))
    return path, rows


def render_configuration(path: Path | None, rows: list[ConfigRow], settings: Settings) -> str:
    """The text `compactor config` prints."""
    if path is None:
        lines = [f"configuration file: none ({CONFIG_VARIABLE} is not set)"]
    else:
        lines = [f"configuration file: {path} ({CONFIG_VARIABLE})"]
    width = max(len(row.variable) for row in rows)
    lines.append(f"{'setting':<{width}}  {'source':<8}  value")
    lines += [f"{row.variable:<{width}}  {row.source:<8}  {row.value}" for row in rows]
    routes = [
        ("/v1/chat/completions", settings.upstream_openai_base, "/chat/completions"),
        ("/v1/messages", settings.upstream_anthropic_root, "/v1/messages"),
    ]
    shown = [(route, _without_userinfo(base) + path) for route, base, path in routes if base]
    if shown:
        lines.append("")
        lines += [f"proxy {route} goes to {url}" for route, url in shown]
    return "\n".join(lines)


def shown_value(name: str, value: Any) -> str:
    """A setting's value for display: secrets masked, URLs without their password."""
    if value is None:
        return "(unset)"
    if isinstance(value, SecretStr):
        return MASK if value.get_secret_value() else "(empty)"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, str) and "://" in value:
        return _without_userinfo(value)
    if isinstance(value, dict):
        plain = {
            k: v.model_dump(exclude_none=True) if isinstance(v, BaseModel) else v
            for k, v in value.items()
        }
        return _json(plain)
    if isinstance(value, list):
        return _json(value)
    return str(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _without_userinfo(url: str) -> str:
    """`url` with a password replaced by the mask (database URLs carry one)."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return url
    if not parsed.password:
        return url
    scheme, rest = url.split("://", 1)
    userinfo, host = rest.rsplit("@", 1)
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:{MASK}@{host}"


# --- the documentation table ---------------------------------------------------------

_INTRO = """\
# Configuration

Generated from the settings class (`app/settings.py`) by `compactor config --markdown`;
`tests/unit/test_configuration.py` fails when a setting is missing here or this file is
stale. `compactor config` prints the effective values and where each came from.

Every setting is an environment variable with the `COMPACTOR_` prefix, or a key of the
configuration file named by `COMPACTOR_CONFIG` (TOML; keys are the setting names in
lower case without the prefix). Highest first: the environment, the file, the default.
An unknown `COMPACTOR_*` variable or file key refuses to start and names the setting
probably meant (`COMPACTOR_FALBACK_CONTEXT_WINDOW` → `COMPACTOR_FALLBACK_CONTEXT_WINDOW`).
[`deploy/compactor.example.toml`](../deploy/compactor.example.toml) has every key,
commented (`compactor config --example` writes it).

## Per-model policy

`[models."pattern"]` tables (glob patterns, matched without regard to case against the
model name a request gives and the registry entry it resolves to) set `context_window`,
`reserve_tokens`, `trigger_ratio` (the share of the window the threshold may reach, 0.85
by default), `keep_recent_tokens`, `strategy` (summarize, clear_tool_results, auto: used
when a request names none), `prepare_ahead_ratio` and `[models."pattern".prices]`
(`input`, `cache_write`, `cache_read`, `output`, US dollars per million tokens). Every
matching pattern applies; a more specific one (a name without wildcards, else more
literal characters) overrides a less specific one key by key. A request's own
`context_window`, `reserve_tokens`, `trigger_tokens` and `keep_recent_tokens` override the
policy. In the environment, `COMPACTOR_MODELS` is the same tables as JSON and replaces the
file's whole `models` table.

Answers say where the window came from: `context_window_source` is `request`, `config`
(a policy), `upstream` (the upstream's model list), `registry`, `alias` (the registry,
through an alias: `[model_aliases]`, a gateway prefix such as `openrouter/` or
`anthropic/`, a Bedrock or Vertex name) or `fallback`; `model_known: false` means nothing
knows the name (a warning is logged once per name).

## Settings
"""


def markdown_table() -> str:
    """docs/configuration.md: every setting with its type, default and description."""
    lines = [_INTRO, "| Variable | Type | Default | Description |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        lines.append(
            f"| `{env_name(name)}` | {_type_label(field.annotation)} | {_default_label(field)} "
            f"| {_cell(field.description or '')} |"
        )
    lines += [
        "",
        "## Other variables",
        "",
        "Read by the tooling, not settings of the service (accepted beside them):",
        "",
        "| Variable | Read by |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {_cell(what)} |" for name, what in OTHER_VARIABLES.items()]
    return "\n".join(lines) + "\n"


def undocumented_settings() -> list[str]:
    """Settings whose field has no docstring (the table would have nothing to say)."""
    return [
        env_name(name)
        for name, field in Settings.model_fields.items()
        if not (field.description or "").strip()
    ]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default_label(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "(required)"
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int):
        return f"`{value:_}`".replace("_", ",")
    if isinstance(value, list | dict):
        return f"`{_json(value)}`"
    return f"`{value}`"


def _type_label(annotation: Any) -> str:
    origin = get_origin(annotation)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if origin in (Union, types.UnionType):
        labels = [_type_label(a) for a in args]
        return labels[0] if len(labels) == 1 else " or ".join(labels)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in _flat_literal(annotation))
    if origin is list:
        return "JSON list"
    if origin is dict:
        return "table (TOML) / JSON object"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(f"`{m.value}`" for m in annotation)
    names = {bool: "boolean", int: "integer", float: "number", str: "string", Path: "path"}
    if annotation is SecretStr:
        return "secret string"
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _flat_literal(annotation: Any) -> list[Any]:
    values = []
    for arg in get_args(annotation):
        values += _flat_literal(arg) if get_origin(arg) is Literal else [arg]
    return values


# --- the example configuration file ----------------------------------------------------

# Values shown for settings that are unset by default (any other: a placeholder by type).
_EXAMPLES: Mapping[str, str] = {
    "auto_migrate": "true",
    "summarizer_base_url": '"http://localhost:11434/v1"',
    "summarizer_api_key": '"sk-..."',
    "summarizer_model": '"gpt-4o-mini"',
    "summarizer_deployment": '"my-gpt-4o-mini"',
    "summarizer_api_version": '"2024-10-21"',
    "api_keys": '"team-a:KEY-A,team-b:KEY-B"',
    "api_keys_file": '"/run/secrets/compactor-api-keys"',
    "models_file": '"/etc/compactor/models.json"',
    "workspace_roots": '"/srv/agents/prompts"',
    "state_key": "\"(python -c 'import secrets; print(secrets.token_urlsafe(32))')\"",
    "upstream_openai_url": '"https://api.openai.com/v1"',
    "upstream_anthropic_url": '"https://api.anthropic.com"',
    "upstream_gemini_url": '"https://generativelanguage.googleapis.com"',
    "upstream_models_api_key": '"sk-litellm-..."',
    "summary_patterns": '["^Summary of the earlier conversation:"]',
    "allowed_hosts": '"compactor.internal,*.svc.cluster.local"',
    "metrics_key": '"metrics-..."',
}

_EXAMPLE_TABLES = """\
# Per-model policy: every [models."<glob>"] table matching a model name applies; a more
# specific pattern overrides a less specific one key by key; a request's own settings
# override both (docs/configuration.md, "Per-model policy").
#
# [models."*"]
# keep_recent_tokens = 20000
#
# [models."claude-sonnet-4-6*"]
# context_window = 1000000
# reserve_tokens = 32768
# trigger_ratio = 0.85
# keep_recent_tokens = 30000
# strategy = "auto"
# prepare_ahead_ratio = 0.8
#
# [models."claude-sonnet-4-6*".prices]
# input = 3.0
# cache_write = 3.75
# cache_read = 0.3
# output = 15.0

# Names that stand for a registry model (exact, or a glob), e.g. a gateway's own names.
#
# [model_aliases]
# "my-claude" = "claude-sonnet-4-6"
# "team-gpt-*" = "gpt-4.1"
"""


def example_toml() -> str:
    """deploy/compactor.example.toml: every setting, commented, with its documentation."""
    lines = [
        "# context-compactor configuration: point COMPACTOR_CONFIG at a copy of this file.",
        "# Every key is commented out at its default (or an example value where it has none);",
        "# the environment (COMPACTOR_<KEY>) overrides the file. Generated by",
        "# `compactor config --example` from app/settings.py; docs/configuration.md explains",
        "# each setting.",
    ]
    for name, field in Settings.model_fields.items():
        if name == "config" or get_origin(field.annotation) is dict:
            continue  # COMPACTOR_CONFIG names this file; tables come last (TOML's order)
        lines.append("")
        lines += [f"# {line}".rstrip() for line in _wrapped(field.description or "")]
        lines.append(f"# {name} = {_toml_value(name, field)}")
    lines.append("")
    return "\n".join(lines) + "\n" + _EXAMPLE_TABLES


def _wrapped(text: str, width: int = 86) -> list[str]:
    words, lines, line = " ".join(text.split()).split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


def _toml_value(name: str, field: FieldInfo) -> str:
    default = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
    if default is None:
        return _EXAMPLES.get(name) or _placeholder(field.annotation)
    if isinstance(default, Enum):
        default = default.value
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, int | float):
        return repr(default)
    return json.dumps(default, ensure_ascii=False)


def _placeholder(annotation: Any) -> str:
    args = [a for a in get_args(annotation) if a is not type(None)] or [annotation]
    return {bool: "true", int: "1", float: "1.0"}.get(args[0], '"..."')
