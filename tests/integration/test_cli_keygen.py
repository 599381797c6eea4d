"""`compactor keygen`: a fresh random key each time, for COMPACTOR_STATE_KEY."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from app.cli import app


def test_keygen_prints_a_new_url_safe_key_each_time() -> None:
    runner = CliRunner()
    keys = [runner.invoke(app, ["keygen"]) for _ in range(2)]
    assert [result.exit_code for result in keys] == [0, 0]
    first, second = (result.output.strip() for result in keys)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", first), first
    assert first != second
