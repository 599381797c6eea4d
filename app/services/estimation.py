"""Counting a history: format, tokenizer choice, cached per-message counts, estimate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from operator import or_
from typing import Any, TypeVar, cast

import orjson

from app.engine.compaction.thresholds import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    DEFAULT_TRIGGER_RATIO,
    CompactionSettings,
    compaction_threshold,
    should_compact,
)
from app.engine.counting.accounting import (
    ESTIMATED_BITS,
    CountingRules,
    Estimated,
    ToolsRule,
    count_system_text,
    count_tools,
    message_cost,
)
from app.engine.counting.count_cache import TokenCountCache
from app.engine.counting.estimate import ContextEstimate, estimate_context
from app.engine.errors import InvalidHistoryError
from app.engine.messages import Conversation, Message
from app.engine.model_policy import ModelPolicy
from app.engine.models import ModelInfo, ModelLookup, WindowSource
from app.engine.ports import Tokenizer
from app.engine.tools import ToolSet
from app.formats.protocol import WireFormat
from app.formats.registry import FORMATS
from app.services.format_mismatch import mismatch_error
from app.services.history import AUTO_TOKENIZER, HistoryInput
from app.services.json_bytes import json_bytes
from app.tokenizers.bpe import TOKENIZER_NAMES, TokenizerRegistry

_T = TypeVar("_T")
# What a caller may ask for: the model's own encoding, or a tokenizer by name.
TOKENIZER_CHOICES = (AUTO_TOKENIZER, *TOKENIZER_NAMES)


@dataclass(frozen=True, slots=True)
class TokenizerChoice:
    tokenizer: Tokenizer
    model: ModelInfo
    exact: bool
    rules: CountingRules

    @property
    def method(self) -> str:
        return "heuristic" if self.tokenizer.name == "chars/4" else "tokenizer"

    @property
    def approximation(self) -> str | None:
        """Why the count cannot be exact whatever the parts: `tokenizer` (not the model's
        own encoding), `framing` (the wire format's framing is unpublished), or None."""
        if self.exact:
            return None
        info = self.model
        if not (info.exact and info.known and self.tokenizer.name == info.encoding):
            return "tokenizer"
        return "framing"


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
    # Parts counted by a guess rather than a published or API-confirmed rule.
    estimated: Estimated = Estimated.NONE
    # `content_digest` of each message (in-process keys, e.g. for memoized prefix hashes).
    message_digests: Sequence[tuple[int, int]] = ()
    # Where `settings.context_window` came from (the request, the config, the registry...).
    context_window_source: WindowSource = WindowSource.REGISTRY
    # Each message's count and guessed-part flags in one int (see `_pack`): what lets a
    # compacted history be counted from this count, its kept messages not counted again.
    packed_counts: Sequence[int] = ()

    @property
    def exact(self) -> bool:
        """True when every part was counted by a published or API-confirmed rule (a
        usage-anchored total is not: it adds counts to the provider's report)."""
        return self.choice.exact and not self.estimated and self.estimate.anchor is None

    @property
    def estimated_parts(self) -> tuple[str, ...]:
        """What was estimated: `tokenizer` / `framing` (the whole count is approximate),
        the parts counted by a guess, and `usage_anchor` for a usage-anchored total."""
        reason = self.choice.approximation
        anchored = ("usage_anchor",) if self.estimate.anchor is not None else ()
        return ((reason,) if reason else ()) + self.estimated.names + anchored

    @property
    def model_known(self) -> bool:
        """False when nothing (registry, alias, config, upstream) knows the model name."""
        return self.choice.model.known

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


def message_digests(messages: Sequence[Any]) -> list[tuple[int, int]]:
    """`content_digest` of each message, in one pass (the re-estimate path's hot loop)."""
    try:
        return [(len(data), hash(data)) for data in map(orjson.dumps, messages)]
    except TypeError:
        # Some message orjson refuses: each one again, with the slow path and its position.
        return [content_digest(m, f"messages[{i}]") for i, m in enumerate(messages)]


class EstimationService:
    """Counts histories; per-message counts are cached by content hash across requests."""

    def __init__(
        self,
        tokenizers: TokenizerRegistry,
        models: ModelLookup,
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
        name = info.encoding if choice == AUTO_TOKENIZER else choice
        if name not in TOKENIZER_NAMES:
            raise InvalidHistoryError(
                f"tokenizer: unknown tokenizer {choice!r}; "
                f"use one of {', '.join(TOKENIZER_CHOICES)}",
                where="tokenizer",
            )
        tokenizer = self.tokenizers.get(name)
        dialect = (wire or FORMATS.default).dialect
        exact = info.exact and info.known and name == info.encoding and dialect.exact_capable
        # The registry's correction factor tunes approximations, never an exact encoding.
        factor = 1.0 if exact or name == "chars/4" else info.token_factor
        rules = CountingRules(
            dialect=dialect,
            tools_rendering=info.tools_rendering,
            tools_upper_bounds=info.tools_upper_bounds,
            image_rule=info.image_rule,
            image_tokens=self.image_tokens,
            token_factor=factor,
        )
        return TokenizerChoice(tokenizer=tokenizer, model=info, exact=exact, rules=rules)

    def policy_for(self, model: str | None) -> ModelPolicy:
        """The operator's policy for `model` (COMPACTOR_CONFIG), empty when none applies."""
        return self.models.resolve(model).policy

    def settings_for(self, history: HistoryInput, info: ModelInfo) -> CompactionSettings:
        """The request's settings, else the model's policy, else the service defaults."""
        policy = info.policy
        return CompactionSettings(
            context_window=history.context_window or info.context_window,
            reserve_tokens=max(
                _first(history.reserve_tokens, policy.reserve_tokens, DEFAULT_RESERVE_TOKENS),
                history.output_budget,
            ),
            trigger_tokens=history.trigger_tokens,
            keep_recent_tokens=_first(
                history.keep_recent_tokens, policy.keep_recent_tokens, DEFAULT_KEEP_RECENT_TOKENS
            ),
            fallback_window=self.models.fallback_window,
            trigger_ratio=_first(policy.trigger_ratio, DEFAULT_TRIGGER_RATIO),
        )

    def count(self, history: HistoryInput, *, parse_all: bool = False) -> CountedHistory:
        """Counts `history`. With `parse_all` every message is normalized (compaction
        needs them); otherwise only messages missing from the cache are parsed."""
        wire = FORMATS.resolve(history.format, history.messages, history.system)
        choice = self.choose_tokenizer(history.model, history.tokenizer, wire)
        tools = wire.parse_tools(history.tools, history.tool_fields)
        try:
            conversation = (
                wire.parse(history.messages, history.system, tools) if parse_all else None
            )
            parsed = conversation.messages if conversation is not None else None
            per_message, estimated, digests, packed = self._count_messages(
                history.messages, parsed, wire.parse_message, choice
            )
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
        tools_tokens, tools_exact = self._count_tools(history, tools, wire, choice)
        if not tools_exact:
            estimated |= Estimated.TOOLS
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
            estimated=estimated,
            message_digests=digests,
            context_window_source=(
                WindowSource.REQUEST if history.context_window else choice.model.window_source
            ),
            packed_counts=packed,
        )

    def resettled(self, history: HistoryInput, counted: CountedHistory) -> CountedHistory:
        """`counted` (a count of `history`'s very messages, system and tools) with the
        settings of `history` (its window, reserve and thresholds)."""
        return replace(counted, settings=self.settings_for(history, counted.choice.model))

    def parsed(self, history: HistoryInput, counted: CountedHistory | None) -> CountedHistory:
        """`history` counted with every message normalized, reusing `counted` (a count of
        this very history) when given: only the parse is added, nothing is counted again.
        The settings are taken from `history` (a caller may have changed keep-recent)."""
        if counted is None:
            return self.count(history, parse_all=True)
        settings = self.settings_for(history, counted.choice.model)
        if counted.conversation is not None:
            return replace(counted, settings=settings)
        wire = counted.wire
        tools = wire.parse_tools(history.tools, history.tool_fields)
        conversation = wire.parse(history.messages, history.system, tools)
        return replace(counted, conversation=conversation, settings=settings)

    def replaced(
        self, counted: CountedHistory, start: int, stop: int, messages: Sequence[Message]
    ) -> CountedHistory:
        """The count of `counted`'s history with its messages [start:stop] replaced by the
        normalized `messages` (a summary, say), from the counts already made: only the new
        messages are counted. The usage reports measured the old history: no anchor.

        `start` must not fall inside the leading inline system messages."""
        assert start >= counted.inline_system_count and len(counted.packed_counts) == len(
            counted.per_message
        )
        _, _, digests, packed = self._count_messages(
            [m.raw for m in messages], messages, None, counted.choice
        )
        packed_after = [*counted.packed_counts[:start], *packed, *counted.packed_counts[stop:]]
        per_message = [entry >> ESTIMATED_BITS for entry in packed_after]
        flags = reduce(or_, packed_after, 0) & ((1 << ESTIMATED_BITS) - 1)
        tools = counted.estimated & Estimated.TOOLS
        estimate = estimate_context(
            per_message,
            inline_system_count=counted.inline_system_count,
            top_level_system_tokens=counted.system_tokens,
            tools_tokens=counted.tools_tokens,
            reply_priming=counted.reply_priming,
        )
        return replace(
            counted,
            per_message=per_message,
            estimate=estimate,
            conversation=(
                replace(
                    counted.conversation,
                    messages=(
                        *counted.conversation.messages[:start],
                        *messages,
                        *counted.conversation.messages[stop:],
                    ),
                )
                if counted.conversation is not None
                else None
            ),
            estimated=Estimated(flags) | tools,
            message_digests=[
                *counted.message_digests[:start],
                *digests,
                *counted.message_digests[stop:],
            ],
            packed_counts=packed_after,
        )

    def _count_tools(
        self, history: HistoryInput, tools: ToolSet, wire: WireFormat, choice: TokenizerChoice
    ) -> tuple[int, bool]:
        """(tokens, exact) of the tool definitions (`tools` and the request's other tool
        fields, as the format reads them)."""
        if not tools:
            return 0, True
        system_text = None
        if wire.dialect.tools is ToolsRule.TYPESCRIPT_NAMESPACE:
            system_text = wire.first_system_text(history.messages, history.system)
        key = ("tools", [d.raw for d in tools.definitions], tools.choice, system_text)

        def compute() -> int:
            cost = count_tools(tools, choice.tokenizer, choice.rules, system_text=system_text)
            return _pack(cost.tokens, Estimated.NONE if cost.exact else Estimated.TOOLS)

        tokens, flags = _unpack(self._cached_count(key, compute, choice))
        return tokens, not flags

    def count_new_messages(self, messages: Sequence[Message], choice: TokenizerChoice) -> list[int]:
        """Counts already-normalized messages (e.g. a freshly written summary message)."""
        return self._count_messages([m.raw for m in messages], messages, None, choice)[0]

    def _count_messages(
        self,
        raws: Sequence[Any],
        parsed: Sequence[Message] | None,
        parse_one: Callable[[Any, str], Message] | None,
        choice: TokenizerChoice,
    ) -> tuple[list[int], Estimated, list[tuple[int, int]], list[int]]:
        """Per-message counts, the parts any message had to guess (both cached), the
        messages' digests, and the packed count of each (count and flags)."""
        # One string tag (its hash computed once) and the digest, flat: every message's
        # lookup hashes its key again, and a nested tuple would rehash more.
        tag = f"{choice.tokenizer.name}|{choice.rules.cache_key[0]}"
        digests = message_digests(raws)
        keys = [(tag, length, digest) for length, digest in digests]
        packed = self.cache.get_many(keys)
        missing = [i for i, c in enumerate(packed) if c is None]
        if missing:
            fixed: list[tuple[int, Estimated]] = []
            spans: list[tuple[int, int]] = []
            texts: list[str] = []
            for i in missing:
                if parsed is not None:
                    message = parsed[i]
                else:
                    assert parse_one is not None
                    message = parse_one(raws[i], f"messages[{i}]")
                cost = message_cost(message, choice.rules)
                fixed.append((cost.fixed, cost.estimated))
                spans.append((len(texts), len(texts) + len(cost.texts)))
                texts.extend(cost.texts)
            text_counts = choice.tokenizer.count_many(texts)
            scaled = choice.rules.scaled
            for i, (base, flags), (lo, hi) in zip(missing, fixed, spans, strict=True):
                value = _pack(base + scaled(sum(text_counts[lo:hi])), flags)
                packed[i] = value
                self.cache.put(keys[i], value)
        filled = cast(list[int], packed)  # every miss was counted above
        counts = [entry >> ESTIMATED_BITS for entry in filled]
        # The flags sit in the low bits: OR-ing whole entries ORs the flags.
        estimated = reduce(or_, filled, 0) & ((1 << ESTIMATED_BITS) - 1)
        return counts, Estimated(estimated), digests, filled

    def _cached_count(self, value: Any, compute: Callable[[], int], choice: TokenizerChoice) -> int:
        if not value[1]:
            return 0
        key = (choice.tokenizer.name, choice.rules.cache_key, content_digest(value))
        cached = self.cache.get(key)
        if cached is None:
            cached = compute()
            self.cache.put(key, cached)
        return cached


def _first(*values: _T | None) -> _T:
    """The first value that is set (the last one always is)."""
    return next(v for v in values if v is not None)


def _pack(tokens: int, estimated: Estimated) -> int:
    """One cache value for a count and its guessed parts (the flags in the low bits)."""
    return (tokens << ESTIMATED_BITS) | int(estimated)


def _unpack(value: int) -> tuple[int, Estimated]:
    return value >> ESTIMATED_BITS, Estimated(value & ((1 << ESTIMATED_BITS) - 1))
