"""The log line format: RFC 3339 timestamps with milliseconds and zone, the request id of
the request being handled, structured fields that never make logging raise."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import logging.config
import re
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import anyio
import pytest

from app.json_logging import JsonFormatter, json_log_config, log_event, rfc3339_millis
from app.request_context import RequestIdFilter, current_request_id, request_id_bound

RFC3339_MILLIS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")


class Lines:
    """A logger whose records go through the JSON formatter and the request-id filter."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        handler = logging.StreamHandler(self.stream)
        handler.setFormatter(JsonFormatter())
        handler.addFilter(RequestIdFilter())
        self.logger = logging.getLogger(f"test.json_logging.{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(handler)
        self.records: list[logging.LogRecord] = []
        self.logger.addFilter(self._keep)

    def _keep(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return True

    def parsed(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]


@pytest.fixture
def lines() -> Iterator[Lines]:
    captured = Lines()
    yield captured
    captured.logger.handlers.clear()


def test_timestamps_are_rfc3339_utc_with_milliseconds(lines: Lines) -> None:
    lines.logger.info("hello")
    (entry,) = lines.parsed()
    assert RFC3339_MILLIS.match(entry["ts"]), entry["ts"]
    assert rfc3339_millis(1796163303.1239) == "2026-12-01T22:15:03.123+00:00"
    # Parsed back, it names the instant the record was made, to the millisecond.
    parsed = datetime.fromisoformat(entry["ts"])
    assert parsed.utcoffset() == timedelta(0)
    assert abs(parsed.timestamp() - lines.records[0].created) < 0.001


def test_a_line_written_while_a_request_is_handled_carries_its_id(lines: Lines) -> None:
    lines.logger.info("before")
    with request_id_bound("req-1"):
        lines.logger.info("during", extra={"tokens": 3})
        lines.logger.info("explicit", extra={"request_id": "other"})
    lines.logger.info("after")
    before, during, explicit, after = lines.parsed()
    assert "request_id" not in before and "request_id" not in after
    assert during["request_id"] == "req-1" and during["tokens"] == 3
    assert explicit["request_id"] == "other"
    assert current_request_id() is None


def test_the_id_follows_into_worker_threads_and_tasks_but_not_across_requests(
    lines: Lines,
) -> None:
    async def handle(request_id: str, gate: anyio.Event) -> None:
        with request_id_bound(request_id):
            await gate.wait()  # both requests are in flight at once
            await anyio.to_thread.run_sync(lines.logger.info, "in a worker thread")
            await asyncio.create_task(_log_later(lines.logger))

    async def main() -> None:
        gate = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(handle, "req-a", gate)
            group.start_soon(handle, "req-b", gate)
            await anyio.sleep(0)
            gate.set()

    anyio.run(main)
    by_id: dict[str, list[str]] = {}
    for entry in lines.parsed():
        by_id.setdefault(entry["request_id"], []).append(entry["msg"])
    assert sorted(by_id) == ["req-a", "req-b"]
    for messages in by_id.values():
        assert sorted(messages) == ["in a task", "in a worker thread"]


async def _log_later(logger: logging.Logger) -> None:
    await asyncio.sleep(0)
    logger.info("in a task")


def test_a_plain_thread_started_elsewhere_has_no_request_id(lines: Lines) -> None:
    with request_id_bound("req-main"):
        thread = threading.Thread(target=lines.logger.info, args=("elsewhere",))
        thread.start()
        thread.join()
    (entry,) = lines.parsed()
    assert "request_id" not in entry


def test_log_event_writes_fields_and_renames_the_ones_logging_reserves(lines: Lines) -> None:
    with request_id_bound("req-7"):
        log_event(
            lines.logger,
            "compaction",
            session_id="s1",
            tokens_before=180_000,
            name="clash",
            msg="clash too",
            level_of_detail=2,
        )
        log_event(lines.logger, "quiet", level=logging.WARNING, reason="r")
    compaction, quiet = lines.parsed()
    assert compaction["msg"] == "compaction" and compaction["level"] == "info"
    assert compaction["request_id"] == "req-7"
    assert compaction["session_id"] == "s1" and compaction["tokens_before"] == 180_000
    assert compaction["name_"] == "clash" and compaction["msg_"] == "clash too"
    assert compaction["logger"] == lines.logger.name
    assert quiet["level"] == "warning" and quiet["reason"] == "r"


def test_log_event_points_at_its_caller(lines: Lines) -> None:
    log_event(lines.logger, "where")
    assert lines.records[0].funcName == "test_log_event_points_at_its_caller"


def test_the_serve_log_configuration_installs_the_request_id_filter() -> None:
    config = json_log_config("info")
    assert config["handlers"]["default"]["filters"] == ["request_id"]
    # dictConfig can build it (the filter and formatter paths resolve).
    stream = io.StringIO()
    config["handlers"]["default"]["stream"] = stream
    config["root"]["handlers"] = []
    config["loggers"] = {"test.serve_config": {"handlers": ["default"], "propagate": False}}
    root = logging.getLogger()
    previous = root.handlers[:], root.level
    try:
        logging.config.dictConfig(config)
        with request_id_bound("req-cfg"):
            logging.getLogger("test.serve_config").warning("configured")
    finally:
        root.handlers[:], root.level = previous
        logging.getLogger("test.serve_config").handlers.clear()
    entry = json.loads(stream.getvalue())
    assert entry["request_id"] == "req-cfg" and RFC3339_MILLIS.match(entry["ts"])
