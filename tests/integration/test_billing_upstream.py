"""The billing fake bills by the vendors' caching rules (tests/billing), checked through
the official SDKs against the real loopback server."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.billing import BillingUpstream, Reply, SimulatedClock
from tests.billing.anthropic_cache import LOOKBACK_BLOCKS
from tests.billing.prefixes import extends
from tests.billing.prices import ANTHROPIC, OPENAI
from tests.billing.tokens import count_text

SONNET = "claude-sonnet-4-5-20250929"
EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}


def words(n: int, seed: str = "w") -> str:
    """Text of `n` tokens (o200k, give or take one) that no other call repeats by accident."""
    low, high = 0, n
    while low < high:  # the most words whose text stays within n tokens
        middle = (low + high + 1) // 2
        if count_text(" ".join(f"{seed}{i}" for i in range(middle))) <= n:
            low = middle
        else:
            high = middle - 1
    return " ".join(f"{seed}{i}" for i in range(low))


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock()


@pytest.fixture
def fake(clock: SimulatedClock) -> Iterator[BillingUpstream]:
    with BillingUpstream(clock) as server:
        yield server


@pytest.fixture
def claude(fake: BillingUpstream) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=fake.base_url, api_key="sk-ant", max_retries=0) as client:
        yield client


@pytest.fixture
def gpt(fake: BillingUpstream) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=fake.openai_base_url, api_key="sk", max_retries=0) as client:
        yield client


def system(text: str, ttl: str | None = None) -> list[dict[str, Any]]:
    control = {**EPHEMERAL, "ttl": ttl} if ttl else EPHEMERAL
    return [{"type": "text", "text": text, "cache_control": control}]


def ask(client: anthropic.Anthropic, **body: Any) -> Any:
    body.setdefault("model", SONNET)
    body.setdefault("max_tokens", 100)
    body.setdefault("messages", [{"role": "user", "content": "Go on."}])
    return client.messages.create(**body).usage


# -- Anthropic ------------------------------------------------------------------------


def test_more_than_four_breakpoints_is_refused_with_the_apis_error(
    claude: anthropic.Anthropic, fake: BillingUpstream
) -> None:
    blocks = [{"type": "text", "text": f"part {i}", "cache_control": EPHEMERAL} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError) as refused:
        ask(claude, messages=[{"role": "user", "content": blocks}])
    assert refused.value.status_code == 400
    error = refused.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error"
    assert error["message"] == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )
    # Four are fine; a top-level cache_control (automatic caching) counts as one more.
    ask(claude, messages=[{"role": "user", "content": blocks[:4]}])
    with pytest.raises(anthropic.BadRequestError, match="Found 5"):
        ask(claude, messages=[{"role": "user", "content": blocks[:4]}], cache_control=EPHEMERAL)
    assert [b.status for b in fake.bills] == [400, 200, 400]


def test_a_byte_identical_prefix_is_read_and_a_changed_one_written_again(
    claude: anthropic.Anthropic, fake: BillingUpstream
) -> None:
    prompt = words(3000)
    first = ask(claude, system=system(prompt))
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_input_tokens > 1024
    assert first.input_tokens < 20  # only what follows the breakpoint: "Go on."
    second = ask(claude, system=system(prompt), messages=[{"role": "user", "content": "Other."}])
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    changed = ask(claude, system=system(prompt.replace("w7 ", "w7! ", 1)))
    assert changed.cache_read_input_tokens == 0
    assert changed.cache_creation_input_tokens == first.cache_creation_input_tokens + 1
    # What is billed is what the usage says, at 1.25x for the writes and 0.1x for reads.
    price = ANTHROPIC["claude-sonnet-4-5"]
    bill = fake.bills[1]
    assert bill.dollars == pytest.approx(
        (bill.uncached + 0.1 * bill.read) * price.input / 1e6 + bill.output * price.output / 1e6
    )


def test_the_order_is_tools_then_system_then_messages(
    claude: anthropic.Anthropic,
) -> None:
    tools = [{"name": "read", "description": words(2000, "t"), "input_schema": {"type": "object"}}]
    prompt = words(2000)
    ask(claude, tools=tools, system=system(prompt))
    other_tools = [{**tools[0], "description": tools[0]["description"] + " more"}]
    # A change in the tools moves everything after them: the system is written again.
    moved = ask(claude, tools=other_tools, system=system(prompt))
    assert moved.cache_read_input_tokens == 0
    # A change after the breakpoint leaves the cached prefix alone.
    kept = ask(
        claude,
        tools=other_tools,
        system=system(prompt),
        messages=[{"role": "user", "content": "A different question."}],
    )
    assert kept.cache_read_input_tokens == moved.cache_creation_input_tokens


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": words(2400)}]
    for turn in range(turns):
        messages.append({"role": "assistant", "content": f"answer {turn}"})
        messages.append({"role": "user", "content": f"question {turn}"})
    return messages


def marked_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = messages[-1]
    block = {"type": "text", "text": last["content"], "cache_control": EPHEMERAL}
    return [*messages[:-1], {"role": last["role"], "content": [block]}]


def test_a_breakpoint_reads_the_longest_prefix_written_within_the_lookback_window(
    claude: anthropic.Anthropic,
) -> None:
    first = ask(claude, messages=marked_last(conversation(0)))
    assert first.cache_creation_input_tokens > 1024
    # Nine turns later (18 new blocks): the breakpoint moved, the old entry is in reach.
    near = ask(claude, messages=marked_last(conversation(9)))
    assert near.cache_read_input_tokens == first.cache_creation_input_tokens
    assert 0 < near.cache_creation_input_tokens < 200
    # The entry written at the turn-9 breakpoint is 20 blocks behind turn 19's: out of
    # reach (the window counts the breakpoint itself), so everything is written again.
    assert LOOKBACK_BLOCKS == 20
    far = ask(claude, messages=marked_last(conversation(19)))
    assert far.cache_read_input_tokens == 0
    assert far.cache_creation_input_tokens > near.cache_read_input_tokens


def test_an_entry_lives_five_minutes_from_its_last_use_or_an_hour(
    claude: anthropic.Anthropic, clock: SimulatedClock
) -> None:
    short, long = words(2000, "s"), words(2000, "l")
    assert ask(claude, system=system(short)).cache_creation_input_tokens > 0
    assert ask(claude, system=system(long, "1h")).cache_creation.ephemeral_1h_input_tokens > 0
    clock.advance(240)
    assert ask(claude, system=system(short)).cache_read_input_tokens > 0  # refreshed here
    clock.advance(240)
    assert ask(claude, system=system(short)).cache_read_input_tokens > 0  # 480 s after writing
    clock.advance(301)
    expired = ask(claude, system=system(short))
    assert expired.cache_read_input_tokens == 0
    assert expired.cache_creation.ephemeral_5m_input_tokens > 0
    assert ask(claude, system=system(long, "1h")).cache_read_input_tokens > 0
    clock.advance(3601)
    assert ask(claude, system=system(long, "1h")).cache_read_input_tokens == 0


@pytest.mark.parametrize(
    ("model", "tokens", "cached"),
    [
        (SONNET, 900, False),
        (SONNET, 1300, True),
        ("claude-haiku-4-5", 3000, False),
        ("claude-haiku-4-5", 4500, True),
        ("claude-3-5-haiku-20241022", 1800, False),
        ("claude-opus-4-6", 3500, False),
    ],
)
def test_a_prefix_under_the_models_minimum_is_not_cached(
    claude: anthropic.Anthropic, model: str, tokens: int, cached: bool
) -> None:
    prompt = words(tokens)
    first = ask(claude, model=model, system=system(prompt))
    second = ask(claude, model=model, system=system(prompt))
    assert (first.cache_creation_input_tokens > 0) is cached
    assert (second.cache_read_input_tokens > 0) is cached
    if not cached:  # billed as plain input, no error
        assert second.input_tokens == first.input_tokens > 0


def test_writes_are_split_by_ttl_and_the_stream_reports_them_in_message_start(
    claude: anthropic.Anthropic,
) -> None:
    blocks = [
        {"type": "text", "text": words(1500, "a"), "cache_control": {**EPHEMERAL, "ttl": "1h"}},
        {"type": "text", "text": words(1500, "b"), "cache_control": EPHEMERAL},
    ]
    with claude.messages.stream(
        model=SONNET, max_tokens=50, system=blocks, messages=[{"role": "user", "content": "Hi"}]
    ) as stream:
        events = list(stream)
        usage = stream.get_final_message().usage
    start = next(e for e in events if e.type == "message_start")
    assert start.message.usage.cache_creation_input_tokens == usage.cache_creation_input_tokens
    assert usage.cache_creation is not None
    one_hour = usage.cache_creation.ephemeral_1h_input_tokens
    five_minutes = usage.cache_creation.ephemeral_5m_input_tokens
    assert one_hour > 0 and five_minutes > 0
    assert one_hour + five_minutes == usage.cache_creation_input_tokens
    assert usage.output_tokens == count_text("ok")


def test_unpaired_tool_uses_are_refused_as_the_api_does(claude: anthropic.Anthropic) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result` blocks"):
        ask(
            claude,
            messages=[
                {"role": "user", "content": "Read a."},
                {"role": "assistant", "content": [call]},
                {"role": "user", "content": "Well?"},
            ],
        )
    result = {"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`"):
        ask(claude, messages=[{"role": "user", "content": [result]}])


def test_the_reply_is_whatever_the_test_scripts(fake: BillingUpstream) -> None:
    fake.reply = lambda received: Reply("Reading it.")
    with anthropic.Anthropic(base_url=fake.base_url, api_key="k", max_retries=0) as client:
        message = client.messages.create(
            model=SONNET, max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )
    assert message.content[0].text == "Reading it."  # type: ignore[union-attr]


# -- OpenAI ---------------------------------------------------------------------------


def chat(client: openai.OpenAI, messages: list[dict[str, Any]], **extra: Any) -> Any:
    extra.setdefault("model", "gpt-4o")
    return client.chat.completions.create(messages=messages, **extra).usage  # type: ignore[arg-type]


def test_openai_caches_from_1024_tokens_in_128_token_steps(gpt: openai.OpenAI) -> None:
    base = [{"role": "system", "content": words(3000)}]
    first = chat(gpt, [*base, {"role": "user", "content": "one"}])
    assert first.prompt_tokens_details.cached_tokens == 0
    second = chat(gpt, [*base, {"role": "user", "content": "two"}])
    cached = second.prompt_tokens_details.cached_tokens
    assert cached >= 1024 and (cached - 1024) % 128 == 0
    # Everything up to the last full step of the common prefix (the system message).
    system_tokens = count_text("system\n" + base[0]["content"]) + 3
    assert system_tokens - 128 < cached <= system_tokens
    short = [{"role": "system", "content": words(800, "x")}]
    chat(gpt, [*short, {"role": "user", "content": "one"}])
    under = chat(gpt, [*short, {"role": "user", "content": "two"}])
    assert under.prompt_tokens_details.cached_tokens == 0


def test_a_different_prompt_cache_key_is_a_different_cache(gpt: openai.OpenAI) -> None:
    messages = [{"role": "system", "content": words(3000)}, {"role": "user", "content": "q"}]
    chat(gpt, messages, prompt_cache_key="session-a")
    again = chat(gpt, messages, prompt_cache_key="session-a")
    assert again.prompt_tokens_details.cached_tokens > 0
    other = chat(gpt, messages, prompt_cache_key="session-b")
    assert other.prompt_tokens_details.cached_tokens == 0
    unkeyed = chat(gpt, messages)
    assert unkeyed.prompt_tokens_details.cached_tokens == 0


def test_openai_caches_expire_after_five_idle_minutes_unless_retained_24h(
    gpt: openai.OpenAI, clock: SimulatedClock
) -> None:
    short = [{"role": "system", "content": words(3000, "a")}, {"role": "user", "content": "q"}]
    kept = [{"role": "system", "content": words(3000, "b")}, {"role": "user", "content": "q"}]
    chat(gpt, short)
    chat(gpt, kept, prompt_cache_retention="24h")
    clock.advance(240)
    assert chat(gpt, short).prompt_tokens_details.cached_tokens > 0  # a read refreshes it
    clock.advance(240)
    assert chat(gpt, short).prompt_tokens_details.cached_tokens > 0
    clock.advance(301)
    assert chat(gpt, short).prompt_tokens_details.cached_tokens == 0
    clock.advance(20 * 3600)
    assert chat(gpt, kept).prompt_tokens_details.cached_tokens > 0


def test_openai_reads_are_billed_at_the_models_discount_and_writes_are_free(
    gpt: openai.OpenAI, fake: BillingUpstream
) -> None:
    messages = [{"role": "system", "content": words(3000)}, {"role": "user", "content": "q"}]
    for model in ("gpt-4o", "gpt-4.1", "gpt-5"):
        chat(gpt, messages, model=model)
        chat(gpt, messages, model=model)
    for written, read in zip(fake.bills[::2], fake.bills[1::2], strict=True):
        price = OPENAI[written.model]
        assert written.dollars == pytest.approx(
            (written.prompt_tokens * price.input + written.output * price.output) / 1e6
        )
        expected = (read.uncached + read.read * price.cache_read) * price.input
        assert read.dollars == pytest.approx((expected + read.output * price.output) / 1e6)
    assert [OPENAI[m].cache_read for m in ("gpt-4o", "gpt-4.1", "gpt-5")] == [0.5, 0.25, 0.1]


def test_responses_report_cached_tokens_in_input_tokens_details(gpt: openai.OpenAI) -> None:
    body: dict[str, Any] = {"model": "gpt-5", "instructions": words(3000), "input": "q"}
    gpt.responses.create(**body)
    usage = gpt.responses.create(**body).usage
    assert usage is not None
    assert usage.input_tokens_details.cached_tokens >= 1024


def test_openai_tool_messages_must_answer_their_calls(gpt: openai.OpenAI) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with pytest.raises(openai.BadRequestError, match="did not have response messages: call_1"):
        chat(gpt, [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [call]}])
    with pytest.raises(openai.BadRequestError, match="must be a response to a preceeding"):
        chat(
            gpt,
            [
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "c", "content": "r"},
            ],
        )


def test_an_unknown_model_is_refused(claude: anthropic.Anthropic, gpt: openai.OpenAI) -> None:
    with pytest.raises(anthropic.NotFoundError):
        ask(claude, model="claude-nonesuch")
    with pytest.raises(openai.NotFoundError):
        chat(gpt, [{"role": "user", "content": "x"}], model="nonesuch")


def test_a_prompt_over_the_context_window_is_refused_as_each_vendor_does(
    clock: SimulatedClock,
) -> None:
    with BillingUpstream(clock, context_window=2_000) as small:
        with anthropic.Anthropic(base_url=small.base_url, api_key="k", max_retries=0) as client:
            ask(client, system=system(words(1500)))
            with pytest.raises(anthropic.BadRequestError, match="prompt is too long: 2"):
                ask(client, system=system(words(2500, "x")))
        with (
            openai.OpenAI(base_url=small.openai_base_url, api_key="k", max_retries=0) as oa,
            pytest.raises(openai.BadRequestError) as refused,
        ):
            chat(oa, [{"role": "user", "content": words(2500)}])
    assert refused.value.code == "context_length_exceeded"
    # A refused prompt writes nothing to the cache and is billed nothing.
    assert [b.status for b in small.bills] == [200, 400, 400]
    assert len(small.anthropic) == 1


def test_extends_tells_a_grown_prompt_from_a_moved_prefix() -> None:
    before = {"model": SONNET, "messages": marked_last(conversation(2))}
    grown = {"model": SONNET, "messages": marked_last(conversation(3))}
    assert extends("messages", before, grown)  # markers moved, content only grew
    edited = copy.deepcopy(grown)
    edited["messages"][1]["content"] = "answer 0, edited"
    assert not extends("messages", before, edited)
    chat_before = {"messages": [{"role": "user", "content": "a"}]}
    chat_after = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    assert extends("chat", chat_before, chat_after)
    assert not extends("chat", chat_after, chat_before)
