"""The name the proxy and native-route tests import; tests/live_server.py serves it.

Kept only so those files (being restructured elsewhere) need no edit: new tests import
`tests.live_server.live_server`, and this module goes once nothing imports it.
"""

from __future__ import annotations

from tests.live_server import live_server as live_service

__all__ = ["live_service"]
