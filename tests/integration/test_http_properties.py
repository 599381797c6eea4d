"""The compaction invariants of tests/unit/test_properties.py, through HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from app.engine.compaction.marker import SUMMARY_MARKER_PREFIX
from tests.compaction_oracle import (
    assert_no_orphaned_results,
    assert_pairs_on_one_side,
    is_summary,
    is_valid_cut,
    oracle_cut,
)
from tests.strategies import histories
from tests.unit.test_properties import FORMATS, HTTP


@pytest.mark.parametrize("fmt", FORMATS)
@HTTP
@given(data=st.data())
def test_http_compact_keeps_the_invariants(
    client: TestClient, fmt: str, data: st.DataObject
) -> None:
    history = data.draw(histories(fmt, max_turns=10), label="history")
    body: dict[str, Any] = {
        "messages": history.messages,
        "system": history.system,
        "force": True,
        "keep_recent_tokens": history.keep_recent_tokens,
        "tokenizer": history.tokenizer,
    }
    if history.give_format:
        body["format"] = fmt
    response = client.post("/compact", json=body)
    messages = history.messages
    k = history.system_count
    start = k + (history.previous_summary is not None)
    estimate_body = {key: value for key, value in body.items() if key != "force"}
    estimate = client.post("/estimate", json=estimate_body)
    per = estimate.json()["per_message"]
    expected_cut = oracle_cut(messages, per, history.keep_recent_tokens, start)
    if response.status_code == 409:
        # The inflation guard: something to fold, but its summary would not shrink it.
        assert response.json()["type"].endswith("/compaction-ineffective")
        assert expected_cut > start
        return
    assert response.status_code == 200, response.text
    out = response.json()
    if not out["compacted"]:
        assert "nothing to compact" in out["reason"]
        assert out["messages"] == messages and out["summary"] is None
        assert expected_cut <= start
        return
    cut = out["cut_index"]
    new = out["messages"]
    assert cut == expected_cut and is_valid_cut(messages[cut])
    assert new[:k] == messages[:k]
    assert new[k + 1 :] == messages[cut:]
    assert new[k]["content"].startswith(SUMMARY_MARKER_PREFIX)
    assert [is_summary(m) for m in new].count(True) == 1
    assert out["summarized_messages"] == cut - start
    assert out["updated_previous_summary"] == (history.previous_summary is not None)
    assert out["estimate_floor"] == len(new)
    assert_pairs_on_one_side(messages, cut)
    assert_no_orphaned_results(new, messages)


@pytest.mark.parametrize("force", [True, False])
def test_unknown_field_with_a_big_integer_survives(client: TestClient, force: bool) -> None:
    big = 2**64 + 1  # a float cannot hold it exactly
    # Long enough that its summary is smaller than it: a forced compaction is not refused.
    messages = [
        {"role": "user", "content": "hi, here is a long note to fold away. " * 200},
        {"role": "assistant", "content": "hello", "x_meta": {"n": big}},
    ]
    body = {"messages": messages, "force": force, "keep_recent_tokens": 1}
    response = client.post("/compact", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["messages"][-1] == messages[-1]
    assert '"n":18446744073709551617' in response.text.replace(" ", "")
