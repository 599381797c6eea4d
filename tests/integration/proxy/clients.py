"""SDK clients pointed at the service (closed after each test by the conftest)."""

from __future__ import annotations

import anthropic
import openai

_CLIENTS: list[openai.OpenAI | anthropic.Anthropic] = []


def close_clients() -> None:
    while _CLIENTS:
        _CLIENTS.pop().close()


def openai_client(proxy_url: str, **headers: str) -> openai.OpenAI:
    client = openai.OpenAI(
        base_url=f"{proxy_url}/v1", api_key="sk-caller", max_retries=0, default_headers=headers
    )
    _CLIENTS.append(client)
    return client


def anthropic_client(proxy_url: str, **headers: str) -> anthropic.Anthropic:
    client = anthropic.Anthropic(
        base_url=proxy_url, api_key="sk-ant-caller", max_retries=0, default_headers=headers
    )
    _CLIENTS.append(client)
    return client
