"""Shared fixtures: the real transcripts, tokenizers and an app client."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.tokenizers.bpe import TokenizerRegistry

DATA = Path(__file__).parent / "data"
CLAUDE_CODE = DATA / "claude_code"
OPENHANDS = DATA / "openhands_swegym"
BIG_OPENAI = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.openai.json"
BIG_ANTHROPIC = CLAUDE_CODE / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.anthropic.json"
AUTOCOMPACTED_ANTHROPIC = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.anthropic.json"


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def tool_pairs_intact(messages: list[dict[str, Any]]) -> bool:
    """True when every tool result in a wire-format history follows its call (both
    formats: OpenAI tool_calls / role tool, Anthropic tool_use / tool_result blocks)."""
    calls: set[str] = set()
    for message in messages:
        calls.update(c["id"] for c in message.get("tool_calls") or [])
        if message.get("role") == "tool" and message["tool_call_id"] not in calls:
            return False
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    calls.add(block["id"])
                if block.get("type") == "tool_result" and block["tool_use_id"] not in calls:
                    return False
    return True


@pytest.fixture(scope="session")
def tokenizers() -> TokenizerRegistry:
    registry = TokenizerRegistry()
    registry.warm()
    return registry


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite store at the head revision, migrated once per run: tests get a copy
    of it (a file copy costs a fifth of running the migrations again)."""
    from app.store.migrate import upgrade

    path = tmp_path_factory.mktemp("migrated") / "store.db"
    upgrade(f"sqlite:///{path}")
    return path


def migrated_copy(template: Path, folder: Path, name: str = "compactor.db") -> str:
    """The URL of a fresh copy of the migrated store `template` in `folder`."""
    target = folder / name
    shutil.copyfile(template, target)
    return f"sqlite:///{target}"


@pytest.fixture
def settings(tmp_path: Path, migrated_sqlite: Path) -> Settings:
    """The settings `client` serves: an empty, migrated SQLite store of the test's own. A
    module whose apps need other settings (another store backend, a summarizer)
    overrides this fixture, not `client`. Migrating on start is tested on empty files
    elsewhere (test_lifespan.py, test_bad_input.py)."""
    return Settings(database_url=migrated_copy(migrated_sqlite, tmp_path))


@pytest.fixture
def client(settings: Settings, tokenizers: TokenizerRegistry) -> Iterator[TestClient]:
    """The app of `settings` with its lifespan running, in process."""
    # One warmed registry for the whole run: building the encodings is the costly part of
    # an app start, and hundreds of tests start one.
    with TestClient(create_app(settings, tokenizers=tokenizers)) as test_client:
        yield test_client


# --- Network guard: no test may reach beyond loopback --------------------------------

_GUARD_ALLOWED_HOSTS_ENV = "COMPACTOR_TEST_ALLOWED_HOSTS"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return host.lower() in ("localhost", "ip6-localhost")


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Refuses connections and name lookups beyond loopback, and fails the test when one
    was attempted even if the code under test swallowed the error. Hosts listed in
    COMPACTOR_TEST_ALLOWED_HOSTS (comma-separated, e.g. a PostgreSQL service) pass."""
    attempts: list[str] = []
    allowed = {h.strip() for h in os.environ.get(_GUARD_ALLOWED_HOSTS_ENV, "").split(",") if h}
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def permitted(host: str) -> bool:
        return _is_loopback(host) or host in allowed

    def check(address: Any) -> None:
        if not (isinstance(address, tuple) and address and isinstance(address[0], str)):
            return  # Unix sockets and the like never leave the machine
        if not permitted(address[0]):
            attempts.append(f"connect to {address[0]}:{address[1]}")
            raise ConnectionRefusedError(f"network guard: tests may not reach {address[0]}")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and not permitted(name):
            attempts.append(f"look up {name}")
            raise socket.gaierror(socket.EAI_NONAME, f"network guard: tests may not look up {name}")
        results = real_getaddrinfo(host, *args, **kwargs)
        if name in allowed:
            allowed.update(str(info[4][0]) for info in results)
        return results

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    if attempts:
        pytest.fail(f"a test tried to reach beyond loopback: {'; '.join(attempts)}")


# --- Databases: every store test runs on SQLite and on a real PostgreSQL ---------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    from tests.postgres import server_bin_dir, throwaway_cluster

    if server_bin_dir() is None:
        message = (
            "PostgreSQL server binaries not found (apt-get install postgresql); "
            "PostgreSQL store tests are SKIPPED on this machine"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " — CI must run them")
        pytest.skip(message)
    with throwaway_cluster() as url:
        yield url


@pytest.fixture(scope="session")
def migrated_postgres(postgres_server: str) -> str:
    """The name of a database at the head revision, migrated once per run: each test's
    database is created from it as a template (a copy of its files)."""
    import psycopg

    from app.store.migrate import upgrade

    name = "migrated_template"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    upgrade(postgres_server.rsplit("/", 1)[0] + f"/{name}")
    return name


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database of each backend, one per test."""
    if request.param == "sqlite":
        yield migrated_copy(request.getfixturevalue("migrated_sqlite"), tmp_path, "store.db")
        return
    import uuid

    import psycopg

    server = request.getfixturevalue("postgres_server")
    template = request.getfixturevalue("migrated_postgres")
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    url = server.rsplit("/", 1)[0] + f"/{name}"
    yield url
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
