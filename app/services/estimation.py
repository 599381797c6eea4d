"""Counting a history: format, tokenizer choice, cached per-message counts, estimate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.compaction.thresholds import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    CompactionSettings,
    compaction_threshold,
    should_compact,
)
from app.engine.counting.accounting import (
    CountingRules,
    count_system_text,
    count_tools,
    message_cost_parts,
)
from app.engine.counting.count_cache import TokenCountCache
from app.engine.counting.estimate import ContextEstimate, estimate_context
from app.engine.errors import InvalidHistoryError
from app.engine.messages import Conversation, Message
from app.engine.models import ModelInfo, ModelRegistry
from app.engine.ports import Tokenizer
from app.formats.protocol import WireFormat
from app.formats.registry import FORMATS
from app.services.format_mismatch import mismatch_error
from app.services.history import HistoryInput
from app.services.json_bytes import json_bytes
from app.tokenizers.bpe import TokenizerRegistry

TOKENIZER_CHOICES = ("auto", "o200k_base", "cl100k_base", "chars/4")


@dataclass(frozen=True, slots=True)
class TokenizerChoice:
    tokenizer: Tokenizer
    model: ModelInfo
    exact: bool
    rules: CountingRules

    @property
    def method(self) -> str:
        return "heuristic" if self.tokenizer.name == "chars/4" else "tokenizer"


@dataclass(frozen=True, slots=True)
class CountedHistory:
    """A history with its format, counts and decision inputs."""

    wire: WireFormat
    choice: TokenizerChoice
    settings: CompactionSettings
    per_message: list[int]
    inline_system_count: int
    system_tokens: int
    tools_tokens: int
    estimate: ContextEstimate
    conversation: Conversation | None

    @property
    def threshold(self) -> int:
        return compaction_threshold(self.settings)

    @property
    def should_compact(self) -> bool:
        return should_compact(self.estimate.tokens, self.settings)

    @property
    def format(self) -> str:
        return self.wire.name

    @property
    def reply_priming(self) -> int:
        return self.wire.dialect.reply_priming


def content_digest(value: Any, where: str = "body") -> tuple[int, int]:
    """An in-process cache key for a JSON value: its serialized length and SipHash.

    Keys never leave the process, so a keyed 64-bit hash (plus the length) is enough: a
    collision among the cache's entries is about as likely as 1 in 10^9, and it costs a
    fraction of a cryptographic digest on the re-estimate path, where hashing dominates.
    """
    data = json_bytes(value, where)
    return len(data), hash(data)


class EstimationService:
    """Counts histories; per-message counts are cached by content hash across requests."""

    def __init__(
        self,
        tokenizers: TokenizerRegistry,
        models: ModelRegistry,
        cache: TokenCountCache,
        image_tokens: int,
    ) -> None:
        self.tokenizers = tokenizers
        self.models = models
        self.cache = cache
        self.image_tokens = image_tokens

    def choose_tokenizer(
        self, model: str | None, choice: str, wire: WireFormat | None = None
    ) -> TokenizerChoice:
        """The tokenizer for `choice` (`auto` → the model's encoding) and exactness."""
        info = self.models.resolve(model)
        name = info.encoding if choice == "auto" else choice
        if name not in TOKENIZER_CHOICES[1:]:
            raise InvalidHistoryError(
                f"tokenizer: unknown tokenizer {choice!r}; "
                f"use one of {', '.join(TOKENIZER_CHOICES)}",
                where="tokenizer",
            )
        tokenizer = self.tokenizers.get(name)
        dialect = (wire or FORMATS.default).dialect
        exact = info.exact and info.known and name == info.encoding and dialect.exact_capable
        rules = CountingRules(
            dialect=dialect, tools_family=info.tools_family, image_tokens=self.image_tokens
        )
        return TokenizerChoice(tokenizer=tokenizer, model=info, exact=exact, rules=rules)

    def settings_for(self, history: HistoryInput, info: ModelInfo) -> CompactionSettings:
        return CompactionSettings(
            context_window=history.context_window or info.context_window,
            reserve_tokens=(
                history.reserve_tokens
                if history.reserve_tokens is not None
                else DEFAULT_RESERVE_TOKENS
            ),
            trigger_tokens=history.trigger_tokens,
            keep_recent_tokens=(
                history.keep_recent_tokens
                if history.keep_recent_tokens is not None
                else DEFAULT_KEEP_RECENT_TOKENS
            ),
            fallback_window=self.models.fallback_window,
        )

    def count(self, history: HistoryInput, *, parse_all: bool = False) -> CountedHistory:
        """Counts `history`. With `parse_all` every message is normalized (compaction
        needs them); otherwise only messages missing from the cache are parsed."""
        wire = FORMATS.resolve(history.format, history.messages, history.system)
        choice = self.choose_tokenizer(history.model, history.tokenizer, wire)
        try:
            conversation = (
                wire.parse(history.messages, history.system, history.tools) if parse_all else None
            )
            parsed = conversation.messages if conversation is not None else None
            per_message = self._count_messages(history.messages, parsed, wire.parse_message, choice)
        except InvalidHistoryError as exc:
            if history.format is None:
                raise
            claim = f"the request says format={wire.name}"
            raise mismatch_error(exc, wire, history.messages, claim) from exc
        inline = (
            conversation.inline_system_count
            if conversation is not None
            else wire.leading_system_count(history.messages)
        )
        system_tokens = self._cached_count(
            ("system", history.system),
            lambda: count_system_text(
                wire.system_text(history.system), choice.tokenizer, choice.rules
            ),
            choice,
        )
        tools_tokens = self._cached_count(
            ("tools", list(history.tools)),
            lambda: count_tools(history.tools, choice.tokenizer, choice.rules),
            choice,
        )
        settings = self.settings_for(history, choice.model)
        estimate = estimate_context(
            per_message,
            inline_system_count=inline,
            top_level_system_tokens=system_tokens,
            tools_tokens=tools_tokens,
            reply_priming=wire.dialect.reply_priming,
            usage=history.usage,
            estimate_floor=history.estimate_floor,
        )
        return CountedHistory(
            wire=wire,
            choice=choice,
            settings=settings,
            per_message=per_message,
            inline_system_count=inline,
            system_tokens=system_tokens,
            tools_tokens=tools_tokens,
            estimate=estimate,
            conversation=conversation,
        )

    def count_new_messages(self, messages: Sequence[Message], choice: TokenizerChoice) -> list[int]:
        """Counts already-normalized messages (e.g. a freshly written summary message)."""
        return self._count_messages([m.raw for m in messages], messages, None, choice)

    def _count_messages(
        self,
        raws: Sequence[Any],
        parsed: Sequence[Message] | None,
        parse_one: Callable[[Any, str], Message] | None,
        choice: TokenizerChoice,
    ) -> list[int]:
        prefix = (choice.tokenizer.name, choice.rules.cache_key)
        keys = [(prefix, content_digest(raw, f"messages[{i}]")) for i, raw in enumerate(raws)]
        counts: list[int | None] = [self.cache.get(key) for key in keys]
        missing = [i for i, c in enumerate(counts) if c is None]
        if missing:
            fixed: list[int] = []
            spans: list[tuple[int, int]] = []
            texts: list[str] = []
            for i in missing:
                if parsed is not None:
                    message = parsed[i]
                else:
                    assert parse_one is not None
                    message = parse_one(raws[i], f"messages[{i}]")
                base, parts = message_cost_parts(message, choice.rules)
                fixed.append(base)
                spans.append((len(texts), len(texts) + len(parts)))
                texts.extend(parts)
            text_counts = choice.tokenizer.count_many(texts)
            for i, base, (lo, hi) in zip(missing, fixed, spans, strict=True):
                value = base + sum(text_counts[lo:hi])
                counts[i] = value
                self.cache.put(keys[i], value)
        return [c for c in counts if c is not None]

    def _cached_count(self, value: Any, compute: Callable[[], int], choice: TokenizerChoice) -> int:
        if not value[1]:
            return 0
        key = (choice.tokenizer.name, choice.rules.cache_key, content_digest(value))
        cached = self.cache.get(key)
        if cached is None:
            cached = compute()
            self.cache.put(key, cached)
        return cached
