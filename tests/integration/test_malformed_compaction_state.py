"""A compaction state token that is not ASCII (a caller's or an attacker's edit) is refused
as bad state: CompactionStateError in the signer, 400 on the vendor route, never a 500."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.services.native.signed_state import CompactionStateError, StateSigner


@pytest.mark.parametrize("token", ["ccs1.abc.é", "ccs1.a b.c", "ccs1.\u0000.x"])
def test_a_non_ascii_compaction_state_is_refused_not_a_crash(token: str) -> None:
    with pytest.raises(CompactionStateError):
        StateSigner(b"k" * 32).open(token)


def test_a_non_ascii_compaction_item_is_a_400(client: TestClient) -> None:
    body = {
        "model": "gpt-4o",
        "input": [{"type": "compaction", "encrypted_content": "ccs1.abc.é"}],
    }
    response = client.post("/v1/responses/input_tokens", json=body)
    assert response.status_code == 400, response.text
