"""Pure compaction engine: normalized messages, token accounting, cut point, summaries.

Nothing here imports a web framework, a database driver, an HTTP client or a tokenizer
library; adapters implement the Protocols in `ports`.
"""
