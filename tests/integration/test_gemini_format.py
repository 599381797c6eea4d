"""The `gemini` wire format (Gemini API `contents`) through the whole service: detection,
counting (o200k approximation, Gemini's image tiles), /estimate, /compact and sessions,
on hand-made contents and on a real tool-using transcript converted to contents
(tests/data/to_gemini.py)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from app.formats.registry import FORMATS
from tests.conftest import CLAUDE_CODE, load_json
from tests.data.to_gemini import convert
from tests.pngs import png_base64

TRANSCRIPT = CLAUDE_CODE / "4d5611e5-241a-462a-8d15-5122611a9569.openai.json"


def transcript() -> dict[str, Any]:
    return convert(load_json(TRANSCRIPT)["messages"])


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        body["id"] = call_id
    return {"functionCall": body}


def response(name: str, output: str, call_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "response": {"output": output}}
    if call_id is not None:
        body["id"] = call_id
    return {"functionResponse": body}


def pairs_intact(contents: list[dict[str, Any]]) -> bool:
    """Every function response follows a call of its name (and id, when it has one)
    that it answers: a kept tail never starts with an answer whose call was summarized."""
    open_calls: dict[str, int] = {}
    for content in contents:
        for part in content.get("parts", []):
            if "functionCall" in part:
                key = part["functionCall"].get("id") or part["functionCall"]["name"]
                open_calls[key] = open_calls.get(key, 0) + 1
            if "functionResponse" in part:
                key = part["functionResponse"].get("id") or part["functionResponse"]["name"]
                if not open_calls.get(key):
                    return False
                open_calls[key] -= 1
    return True


def test_contents_are_detected_as_gemini() -> None:
    assert FORMATS.detect(transcript()["contents"]).name == "gemini"
    assert FORMATS.detect([user("hi")]).name == "gemini"
    assert FORMATS.detect([{"role": "model", "parts": [{"text": "hello"}]}]).name == "gemini"


def test_parallel_calls_without_ids_pair_by_name_and_order() -> None:
    contents = [
        user("read both"),
        {
            "role": "model",
            "parts": [call("read", path="a"), call("read", path="b"), call("ls", path=".")],
        },
        {
            "role": "user",
            "parts": [response("read", "A"), response("ls", "x y"), response("read", "B")],
        },
        {"role": "model", "parts": [call("read", path="c")]},
        {"role": "user", "parts": [response("read", "C")]},
    ]
    parsed = FORMATS.get("gemini").parse(contents).messages
    calls = [b.tool_call_id for b in parsed[1].blocks]
    results = [b.tool_call_id for b in parsed[2].blocks]
    assert calls == ["read#0", "read#1", "ls#0"]
    assert results == ["read#0", "ls#0", "read#1"]
    assert parsed[2].is_tool_result and not parsed[2].is_valid_cut_point
    assert [b.tool_call_id for b in parsed[3].blocks] == ["read#2"]
    assert [b.tool_call_id for b in parsed[4].blocks] == ["read#2"]


def test_ids_pair_calls_when_present_whatever_the_order() -> None:
    contents = [
        {"role": "model", "parts": [call("read", "c1", path="a"), call("read", "c2", path="b")]},
        {"role": "user", "parts": [response("read", "B", "c2"), response("read", "A", "c1")]},
    ]
    parsed = FORMATS.get("gemini").parse(contents).messages
    assert [b.tool_call_id for b in parsed[1].blocks] == ["c2", "c1"]


def test_parts_are_counted_and_guesses_reported(client: TestClient) -> None:
    contents = [
        user("Plot it."),
        {
            "role": "model",
            "parts": [
                {"text": "I should run code.", "thought": True, "thoughtSignature": "c2ln"},
                {"executableCode": {"language": "PYTHON", "code": "print(1 + 1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
                {"futurePart": {"kind": "new", "value": 42}},
            ],
        },
    ]
    out = client.post(
        "/estimate", json={"messages": contents, "model": "gemini-2.5-flash", "format": "gemini"}
    ).json()
    assert out["exact"] is False
    assert all(count > 0 for count in out["per_message"])
    assert {"thinking", "blocks"} <= set(out["breakdown"]["estimated"])


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    [(384, 384, 258), (200, 100, 258), (385, 100, 258), (800, 600, 516), (1600, 1600, 2322)],
)
def test_images_cost_gemini_tiles(client: TestClient, width: int, height: int, tokens: int) -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": png_base64(width, height)}}
    bare = client.post(
        "/estimate", json={"messages": [user("see")], "model": "gemini-2.5-pro"}
    ).json()
    with_image = client.post(
        "/estimate",
        json={
            "messages": [{"role": "user", "parts": [{"text": "see"}, image]}],
            "model": "gemini-2.5-pro",
        },
    ).json()
    assert with_image["tokens"] - bare["tokens"] == tokens
    # The tile rule is the model family's published one: not a guess.
    assert "images" not in with_image["breakdown"]["estimated"]


def test_registry_has_the_gemini_windows(client: TestClient) -> None:
    for model in ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview", "gemini-3-flash"):
        out = client.post("/estimate", json={"messages": [user("hi")], "model": model}).json()
        assert out["context_window"] == 1_048_576, model


@pytest.mark.parametrize("keep", [2_000, 8_000, 30_000])
def test_compact_a_real_transcript_keeps_calls_with_their_responses(
    client: TestClient, keep: int
) -> None:
    request = transcript()
    contents = request["contents"]
    body = {
        "messages": contents,
        "system": request.get("systemInstruction"),
        "model": "gemini-2.5-flash",
        "force": True,
        "keep_recent_tokens": keep,
    }
    out = client.post("/compact", json=body)
    assert out.status_code == 200, out.text
    result = out.json()
    assert result["compacted"] and result["format"] == "gemini"
    new, cut = result["messages"], result["cut_index"]
    assert new[0]["role"] == "user" and new[0]["parts"][0]["text"].startswith(SUMMARY_MARKER_PREFIX)
    # The tail is the very same contents: signatures, thoughts and all.
    assert new[1:] == contents[cut:]
    assert pairs_intact(new[1:])
    assert "functionResponse" not in new[1]["parts"][0]
    assert result["tokens_after"] < result["tokens_before"]


def test_a_signature_stays_on_the_part_it_signs_after_clearing(client: TestClient) -> None:
    contents = transcript()["contents"]
    out = client.post(
        "/compact",
        json={
            "messages": contents,
            "model": "gemini-2.5-flash",
            "force": True,
            "strategy": "clear_tool_results",
            "clear": {"keep": 2},
        },
    )
    assert out.status_code == 200, out.text
    new = out.json()["messages"]
    assert len(new) == len(contents)
    signed_before = [
        (i, j, p["thoughtSignature"])
        for i, c in enumerate(contents)
        for j, p in enumerate(c["parts"])
        if "thoughtSignature" in p
    ]
    for i, j, signature in signed_before:
        assert new[i]["parts"][j]["thoughtSignature"] == signature
        assert "functionCall" in new[i]["parts"][j]
    cleared = [
        p
        for c in new
        for p in c["parts"]
        if "functionResponse" in p
        and p["functionResponse"]["response"]["output"].startswith("[tool result cleared")
    ]
    assert cleared


def test_sessions_take_gemini_contents(client: TestClient) -> None:
    request = transcript()
    system = {"parts": [{"text": "You are a coding agent."}]}
    created = client.post(
        "/sessions",
        json={"model": "gemini-2.5-flash", "system": system, "keep_recent_tokens": 2_000},
    )
    assert created.status_code in (200, 201), created.text
    session = created.json()["id"]
    contents = request["contents"][:80]
    appended = client.post(f"/sessions/{session}/messages", json={"messages": contents})
    assert appended.status_code in (200, 201), appended.text
    context = client.get(f"/sessions/{session}/context").json()
    assert context["format"] == "gemini"
    assert context["messages"] == contents
    compacted = client.post(f"/sessions/{session}/compact", json={})
    assert compacted.status_code == 200, compacted.text
    after = client.get(f"/sessions/{session}/context").json()["messages"]
    assert after[0]["parts"][0]["text"].startswith(SUMMARY_MARKER_PREFIX)
    assert pairs_intact(after[1:])


def test_the_inspector_shows_a_gemini_session(client: TestClient) -> None:
    contents = [
        user("Which files are there?"),
        {"role": "model", "parts": [call("list_files", path="src")]},
        {"role": "user", "parts": [response("list_files", "main.py util.py")]},
        {"role": "model", "parts": [{"text": "Two files: main.py and util.py."}]},
    ]
    session = client.post("/sessions", json={"model": "gemini-2.5-flash"}).json()["id"]
    client.post(f"/sessions/{session}/messages", json={"messages": contents})
    page = client.get(f"/ui/sessions/{session}")
    assert page.status_code == 200, page.text
    for shown in ("Which files are there?", "tool call list_files", "main.py util.py", "Two files"):
        assert shown in page.text
