"""A billing fake upstream: a real HTTP server on 127.0.0.1 that answers the Anthropic
Messages and OpenAI Chat Completions / Responses APIs and bills every request by the
vendors' published prompt-caching rules, on a simulated clock.

Tests and `bench/cost.py` share it: `BillingUpstream` (the server), `SimulatedClock`,
`Reply` (what the model says) and the rules behind the bills (`anthropic_cache`,
`openai_cache`, `prices`; each module's docstring says which rule comes from where).
"""

from tests.billing.answers import Reply, ToolUse
from tests.billing.clock import SimulatedClock
from tests.billing.ledger import Bill, Totals
from tests.billing.server import BillingUpstream, Received
from tests.billing.summaries import summarizing

__all__ = [
    "Bill",
    "BillingUpstream",
    "Received",
    "Reply",
    "SimulatedClock",
    "ToolUse",
    "Totals",
    "summarizing",
]
