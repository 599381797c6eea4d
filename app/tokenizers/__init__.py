"""Tokenizer adapters implementing `app.engine.ports.Tokenizer`."""
