"""Server-sent events as the vendor APIs stream them: frames split as bytes arrive."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson


class SseFrames:
    """Splits a byte stream into whole events (`\\n\\n`-terminated), buffering the rest."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The frames `chunk` completes, without their terminating blank line."""
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            frame, self._buffer = self._buffer.split(b"\n\n", 1)
            yield frame

    def rest(self) -> bytes:
        """Whatever was left unterminated (handed back as it came)."""
        rest, self._buffer = self._buffer, b""
        return rest


def frame_data(frame: bytes) -> bytes:
    """The joined `data:` lines of one frame."""
    return b"\n".join(line[5:].lstrip() for line in frame.split(b"\n") if line.startswith(b"data:"))


def frame_json(frame: bytes) -> dict[str, Any] | None:
    """The frame's data as a JSON object with a string `type`; None for anything else."""
    data = frame_data(frame)
    if not data:
        return None
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        return None
    return payload


def sse(event: str, data: Mapping[str, Any]) -> bytes:
    """One server-sent event."""
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class EventCapture:
    """The shared half of a reply capture: frames decoded to JSON payloads, a stream of a
    shape it does not understand abandoned (the relay never is), `finished` tracked.

    Subclasses handle each payload in `_event` and say which payload ends the stream.
    """

    # `data: [DONE]` ends a Chat Completions stream.
    done_sentinel = False

    def __init__(self) -> None:
        self._frames = SseFrames()
        self._broken = False
        self._seen = False
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def usable(self) -> bool:
        """True when the stream finished cleanly with at least one event understood."""
        return self._finished and self._seen and not self._broken

    def feed(self, chunk: bytes) -> bool:
        if self._broken:
            return False
        for frame in self._frames.feed(chunk):
            data = frame_data(frame)
            if data == b"[DONE]":
                if self.done_sentinel:
                    self._finished = True
                continue
            if not data:
                continue
            try:
                payload = orjson.loads(data)
            except orjson.JSONDecodeError:
                self._broken = True  # not a stream we understand: record nothing
                return False
            if not isinstance(payload, dict):
                continue
            self._seen = True
            try:
                self._event(payload)
            except (AttributeError, TypeError, KeyError, ValueError):
                # An event of a shape we do not know (a string delta, a numeric name):
                # stop recording, never the relay. The caller still gets every byte.
                self._broken = True
                return False
            if self._is_final(payload):
                self._finished = True
        return self._finished

    def _event(self, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    def _is_final(self, payload: dict[str, Any]) -> bool:
        return False


class FrameRewriter:
    """Rewrites an event stream event by event: bytes in as they arrive, bytes out as
    soon as a whole event is there; a rewriter with nothing to write passes bytes on."""

    def __init__(self, active: bool) -> None:
        self._active = active
        self._frames = SseFrames()

    def feed(self, chunk: bytes) -> bytes:
        """The rewritten events completed by `chunk`."""
        if not self._active:
            return chunk
        out: list[bytes] = []
        for frame in self._frames.feed(chunk):
            out.extend(self._rewrite(frame))
        return b"".join(out)

    def close(self) -> bytes:
        """Whatever was left unterminated, as it came."""
        return self._frames.rest()

    def _rewrite(self, frame: bytes) -> Iterable[bytes]:
        raise NotImplementedError
