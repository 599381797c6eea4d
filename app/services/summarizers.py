"""Which summarizer the service uses, from configuration only."""

from __future__ import annotations


from app.engine.ports import Summarizer
from app.settings import Settings


def build_summarizer(settings: Settings) -> Summarizer:
    """The configured summarizer; the extractive one needs no model and no network."""
    if settings.summarizer == "extractive":
        from app.engine.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer()
    raise NotImplementedError(f"summarizer {settings.summarizer!r} is not available yet")
