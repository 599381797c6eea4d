"""context-compactor: a context-management sidecar for LLM agents."""

__version__ = "0.1.0"
