"""The offline, deterministic extractive summarizer."""
