"""Compaction strategies: one module each, behind the `CompactionStrategy` port."""
