"""What the request-body checks cost: orjson.loads alone (baseline) vs the parse the API
runs (exact big integers, nesting depth bounded), on a real transcript repeated to ~14 MB.

    .venv/bin/python -m bench.body_parse
"""

from __future__ import annotations

import orjson

from app.api.limits import json_too_deep
from app.api.routing import parse_json_body
from bench.common import measure, ms
from tests.conftest import BIG_OPENAI, load_json


def main() -> None:
    body = load_json(BIG_OPENAI)
    rest = [m for m in body["messages"] if m.get("role") != "system"]
    data = orjson.dumps({"messages": rest * 25})
    value = orjson.loads(data)
    baseline = measure(lambda: orjson.loads(data), repeat=7)
    depth = measure(lambda: json_too_deep(value), repeat=7)
    parse = measure(lambda: parse_json_body(data), repeat=7)
    print(f"body: {len(data) / 1e6:.1f} MB")
    print(f"orjson.loads (baseline)      {ms(baseline)}")
    print(f"nesting-depth walk           {ms(depth)} = {depth / baseline:.2f}x baseline")
    print(f"parse_json_body (API parse)  {ms(parse)} = {parse / baseline:.2f}x baseline")


if __name__ == "__main__":
    main()
