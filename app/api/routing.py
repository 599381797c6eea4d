"""A route class that parses JSON bodies with orjson (several times faster on the
megabyte-sized histories this service receives)."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import orjson
from fastapi import HTTPException
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from app.api.limits import MAX_JSON_DEPTH, json_too_deep

# A run of 19+ digits may be an integer beyond 64 bits, which orjson would turn into a
# float; such bodies go to the standard parser, which keeps every integer exact. Mapping
# every digit to "0" and searching for 19 zeros is a C-speed scan (a regex took ~4 ms on
# a 600 KB history).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGIT_RUN = b"0" * 19


def may_hold_big_integers(body: bytes) -> bool:
    return _LONG_DIGIT_RUN in body.translate(_DIGITS_AS_ZERO)


# Bodies above this are parsed in a worker thread, so a large history does not hold up
# the event loop (and every other request, /healthz included) while it is parsed.
_THREAD_PARSE_BYTES = 256 * 1024
_TOO_DEEP = (
    f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep; flatten it "
    "(a value nested that deep could be stored but not answered back)"
)


class OrjsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            if len(body) > _THREAD_PARSE_BYTES:
                self._json = await anyio.to_thread.run_sync(parse_json_body, body)
            else:
                self._json = parse_json_body(body)
        return self._json


def parse_json_body(body: bytes) -> Any:
    """A request body as JSON (exact big integers), refused when nested too deeply."""
    try:
        if may_hold_big_integers(body):
            value = strict_json_loads(body)
        else:
            try:
                value = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                if "depth limit" in str(exc):
                    raise HTTPException(422, _TOO_DEEP) from exc
                # The standard parser has the final word and the familiar error.
                value = strict_json_loads(body)
    except RecursionError as exc:  # the standard parser on a body thousands of levels deep
        raise HTTPException(422, _TOO_DEEP) from exc
    if json_too_deep(value):
        raise HTTPException(422, _TOO_DEEP)
    return value


def strict_json_loads(body: bytes) -> Any:
    """The standard parser, minus what it accepts beyond JSON: NaN, Infinity, numbers that
    overflow to infinity, and unpaired UTF-16 surrogate escapes (not Unicode text; they
    could not be stored or answered back)."""
    value = json.loads(body, parse_constant=_refuse_constant)
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as exc:
        if isinstance(exc, UnicodeEncodeError):
            raise HTTPException(
                422,
                "the body contains an unpaired UTF-16 surrogate escape (like \\ud800); "
                "send valid Unicode text",
            ) from exc
        raise json.JSONDecodeError(
            "a number is out of range (it would be infinite)", body.decode("utf-8", "replace"), 0
        ) from exc
    return value


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


class OrjsonRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def parse_with_orjson(request: Request) -> Response:
            return await handler(OrjsonRequest(request.scope, request.receive))

        return parse_with_orjson


async def answer_off_loop(build: Callable[[], BaseModel]) -> Response:
    """The JSON answer of an async endpoint, built and serialized in a worker thread: a
    history of many megabytes would otherwise hold the event loop while it is encoded."""

    def encode() -> Response:
        return Response(build().model_dump_json(), media_type="application/json")

    return await anyio.to_thread.run_sync(encode)
