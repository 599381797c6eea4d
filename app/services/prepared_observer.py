"""The port the summaries prepared ahead (SPEC §16) report through, sessions' and
stateless callers' alike: started, stored, failed…, and the ones never used
(the metrics implement it: app.api.metrics)."""

from __future__ import annotations

from typing import Protocol


class PrepareObserver(Protocol):
    """Told about background summaries (metrics live behind this port)."""

    def prepared_summary(self, outcome: str) -> None: ...

    def prepared_wasted(self) -> None: ...


class NullPrepareObserver:
    def prepared_summary(self, outcome: str) -> None:
        return None

    def prepared_wasted(self) -> None:
        return None
