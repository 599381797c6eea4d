"""Use cases joining the engine with tokenizers, formats, providers and the store."""
