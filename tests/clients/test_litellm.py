"""The LiteLLM hook (`context_compactor.integrations.litellm`) in the REAL LiteLLM proxy:
`litellm --config config.yaml` with one `callbacks:` line, in front of a fake model API on
loopback; what the fake received is the history the service compacted.

The proxy runs from its own virtualenv, `.venv-litellm` (made by `scripts/test`):
`litellm[proxy]` pins `rich<14`, which the suite's import-linter cannot run with.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.settings import Settings
from tests.integration.fake_upstreams import FakeUpstream
from tests.integration.live_server import live_service

ROOT = Path(__file__).resolve().parents[2]
LITELLM = ROOT / ".venv-litellm" / "bin" / "litellm"
if not LITELLM.exists():
    _message = (
        f"{LITELLM} not found (bash scripts/test makes it): the LiteLLM proxy tests are SKIPPED"
    )
    if os.environ.get("CI"):
        raise RuntimeError(_message + " — CI must run them")
    pytest.skip(_message, allow_module_level=True)

MASTER_KEY = "sk-litellm-master-1"
CONFIG = """\
model_list:
  - model_name: gpt-4
    litellm_params:
      model: openai/gpt-4
      api_base: {upstream}/v1
      api_key: sk-upstream-openai
  - model_name: claude-sonnet-4-5
    litellm_params:
      model: anthropic/claude-sonnet-4-5
      api_base: {upstream}
      api_key: sk-upstream-anthropic
litellm_settings:
  callbacks: context_compactor.integrations.litellm.handler
general_settings:
  master_key: {master_key}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def turns(count: int, words: int = 250) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Turn {i}: " + " ".join(f"w{i}x{j}" for j in range(words)),
        }
        for i in range(count - 1)
    ] + [{"role": "user", "content": "What now?"}]


def is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return isinstance(content, str) and SUMMARY_MARKER_PREFIX in content


@dataclass
class Gateway:
    url: str
    compactor: str
    upstream: FakeUpstream
    log: Path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("litellm")
    with FakeUpstream() as upstream:
        settings = Settings(database_url=f"sqlite:///{tmp / 'c.db'}")
        with live_service(settings) as compactor:
            config = tmp / "config.yaml"
            config.write_text(CONFIG.format(upstream=upstream.base_url, master_key=MASTER_KEY))
            port = _free_port()
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(tmp),
                "COMPACTOR_URL": compactor,
                # Offline: the model price map shipped in the package, no telemetry.
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "LITELLM_TELEMETRY": "False",
                "ANTHROPIC_API_BASE": upstream.base_url,
                "ANTHROPIC_API_KEY": "sk-upstream-anthropic",
                "NO_PROXY": "*",
            }
            log = tmp / "litellm.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [
                        str(LITELLM),
                        "--config",
                        str(config),
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                    ],
                    env=env,
                    cwd=tmp,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
                url = f"http://127.0.0.1:{port}"
                try:
                    _wait_ready(url, process, log)
                    yield Gateway(url, compactor, upstream, log)
                finally:
                    process.terminate()
                    try:
                        process.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait(timeout=10)


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"litellm exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"litellm did not start: {log.read_text()[-3000:]}")


def test_a_chat_history_over_the_threshold_reaches_the_model_compacted(gateway: Gateway) -> None:
    history = turns(40)
    with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0) as client:
        reply = client.chat.completions.create(model="gpt-4", messages=history)  # type: ignore[arg-type]
    assert reply.choices[0].message.content
    sent = gateway.upstream.bodies("/chat/completions")[-1]["messages"]
    assert len(sent) < len(history) and is_summary(sent[0])
    assert sent[-1] == history[-1]
    assert gateway.upstream.received[-1].headers["authorization"] == "Bearer sk-upstream-openai"


def test_a_short_chat_history_reaches_the_model_unchanged(gateway: Gateway) -> None:
    history = [{"role": "user", "content": "hi"}]
    with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0) as client:
        client.chat.completions.create(model="gpt-4", messages=history)  # type: ignore[arg-type]
    sent = gateway.upstream.bodies("/chat/completions")[-1]["messages"]
    assert [m["content"] for m in sent] == ["hi"]


def test_anthropic_messages_are_compacted_with_the_system_prompt_kept(gateway: Gateway) -> None:
    history = turns(40)
    with anthropic.Anthropic(base_url=gateway.url, api_key=MASTER_KEY, max_retries=0) as client:
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            system="Be brief.",
            messages=history,  # type: ignore[arg-type]
            # claude-sonnet-4-5's 200k window would take this history whole: the request
            # asks for its own trigger instead.
            extra_body={"metadata": {"compactor": {"trigger_tokens": 5_000}}},
        )
    body = gateway.upstream.bodies("/v1/messages")[-1]
    sent = body["messages"]
    assert len(sent) < len(history) and is_summary(sent[0])
    assert sent[-1]["content"] in (history[-1]["content"], [{"type": "text", "text": "What now?"}])
    assert "Be brief." in str(body["system"])
    assert "compactor" not in str(body.get("metadata", {}))


def test_the_anthropic_pass_through_is_compacted_too(gateway: Gateway) -> None:
    history = turns(40)
    answer = httpx.post(
        f"{gateway.url}/anthropic/v1/messages",
        json={
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "messages": history,
            "metadata": {"compactor": {"trigger_tokens": 5_000}},
        },
        headers={"authorization": f"Bearer {MASTER_KEY}", "anthropic-version": "2023-06-01"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    received = gateway.upstream.received[-1]
    assert received.path.startswith("/v1/messages")
    sent = received.body["messages"]
    assert len(sent) < len(history) and is_summary(sent[0])
    assert "metadata" not in received.body


def test_a_named_session_is_what_the_model_gets(gateway: Gateway) -> None:
    sid = httpx.post(f"{gateway.compactor}/sessions", json={"model": "gpt-4"}).json()["id"]
    history = turns(40)
    with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0) as client:
        client.chat.completions.create(
            model="gpt-4",
            messages=history,  # type: ignore[arg-type]
            extra_body={"metadata": {"compactor_session": sid}},
        )
    transcript = httpx.get(f"{gateway.compactor}/sessions/{sid}/transcript").json()
    assert transcript["total"] == len(history)
    context = httpx.get(f"{gateway.compactor}/sessions/{sid}/context").json()
    sent = gateway.upstream.bodies("/chat/completions")[-1]["messages"]
    assert is_summary(sent[0]) and len(sent) == len(context["messages"])
    assert sent[-1] == history[-1]
