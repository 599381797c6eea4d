"""Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from app.api.deps import State
from app.api.problems import Problem

router = APIRouter(tags=["operations"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "Prometheus text format"},
        401: {"model": Problem},
        403: {"model": Problem, "description": "A tenant's key: /metrics takes the metrics key"},
    },
)
def metrics(state: State) -> Response:
    """Requests, latencies, compactions, tokens and summarizer calls (Prometheus text).

    They add up every tenant: with API keys on, only COMPACTOR_METRICS_KEY reads them."""
    return Response(state.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
