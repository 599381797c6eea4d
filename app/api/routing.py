"""A route class that parses JSON bodies with orjson (several times faster on the
megabyte-sized histories this service receives)."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response


class OrjsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = orjson.loads(body)
            except orjson.JSONDecodeError:
                # orjson refuses a few inputs the JSON grammar allows (integers beyond 64
                # bits); the standard parser decides, and raises for truly bad JSON.
                self._json = json.loads(body)
        return self._json


class OrjsonRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def parse_with_orjson(request: Request) -> Response:
            return await handler(OrjsonRequest(request.scope, request.receive))

        return parse_with_orjson
