"""Summarizer replies are capped in size once decompressed (a real loopback provider)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from tests.integration.fake_providers import OpenAIFake, Reply
from tests.integration.test_providers import KEY, compact_body

LIMIT = 1_000_000


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


@pytest.fixture
def settings(fake: OpenAIFake, tmp_path: Path) -> Settings:
    """The `client` of this module summarizes through the fake provider."""
    return Settings(
        database_url=f"sqlite:///{tmp_path / 'compactor.db'}",
        summarizer="openai",
        summarizer_base_url=f"{fake.base_url}/v1",
        summarizer_model="gpt-4o",
        summarizer_api_key=KEY,
        summarizer_max_retries=0,
        summarizer_max_reply_bytes=LIMIT,
    )


def _gzip_bomb(decoded_bytes: int) -> bytes:
    """A small gzip body that inflates to `decoded_bytes` zeros."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    parts = [packer.compress(block) for _ in range(decoded_bytes // len(block))]
    return b"".join([*parts, packer.flush()])


def test_a_gzip_bomb_is_refused_unread_with_502(fake: OpenAIFake, client: TestClient) -> None:
    bomb = _gzip_bomb(64 * LIMIT)
    assert len(bomb) < LIMIT // 4
    fake.script(Reply("raw", headers={"content-encoding": "gzip"}, body=bomb))
    response = client.post("/compact", json=compact_body(force=True))
    assert response.status_code == 502, response.text
    detail = response.json()["detail"]
    assert f"larger than {LIMIT} bytes once decompressed" in detail
    assert "COMPACTOR_SUMMARIZER_MAX_REPLY_BYTES" in detail


def test_a_huge_plain_reply_is_refused_and_a_normal_one_is_not(
    fake: OpenAIFake, client: TestClient
) -> None:
    huge = fake.completion("## Goal\n" + "x" * (2 * LIMIT), truncated=False, usage=(10, 10))
    fake.script(Reply.raw(json.dumps(huge).encode()), Reply.ok())
    refused = client.post("/compact", json=compact_body(force=True))
    assert refused.status_code == 502, refused.text
    assert "once decompressed" in refused.json()["detail"]
    accepted = client.post("/compact", json=compact_body(force=True))
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["compacted"] is True


def test_a_gzipped_reply_under_the_limit_is_read(fake: OpenAIFake, client: TestClient) -> None:
    body = json.dumps(fake.completion("## Goal\n- fix the parser", False, (10, 10))).encode()
    fake.script(
        Reply("raw", headers={"content-encoding": "gzip"}, body=zlib.compress(body, wbits=31))
    )
    response = client.post("/compact", json=compact_body(force=True))
    assert response.status_code == 200, response.text
    assert "fix the parser" in response.json()["summary"]
