"""What assistant text says it decided and what it will do next, without the filler.

"Let me force-add it:" announces the tool call that follows (already in Done), and
"Acknowledged. Continuing with the plan." says nothing: neither is a next step. A stated plan
is kept as a step ("I'll add the guard to `parse()` next" → "Add the guard to `parse()`
next"), so Next Steps read as instructions.
"""

from __future__ import annotations

import re

from app.engine.extractive.statements import content_words
from app.engine.extractive.text import cap, sentences

_PLAN_LEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|now|next|then|so|first|finally|great|good|perfect|alright|right|"
    r"excellent|next step|after that|afterwards)[,:!.]?\s+)*"
    r"(?:(?:let\s+me|let['’]s|i['’]ll|i\s+will|i\s+am\s+going\s+to|i['’]m\s+going\s+to|"
    r"i\s+need\s+to|we\s+need\s+to|i\s+should|we\s+should|i\s+can\s+now|we['’]ll|we\s+will|"
    r"the\s+next\s+step\s+is\s+to|next\s+step\s*:|i\s+(?:now\s+)?want\s+to)\s+)"
    r"|接下来|下一步|我(?:将|会|来|要)",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:acknowledged|understood|noted|got it|sure|ok(?:ay)?|great|perfect|excellent|good|"
    r"done|thanks|thank you)\b[\s,.!]*(?:continuing|moving on|proceeding|let['’]s|carry)?",
    re.IGNORECASE,
)
_DECISION_CUE = re.compile(
    r"\b(?:decided|decide\s+to|chose|choose\s+to|opted|going\s+with|instead\s+of|rather\s+than|"
    r"the\s+(?:fix|solution|approach|root\s+cause|cause|problem|issue)\s+(?:is|was|will\s+be)|"
    r"because|so\s+that)\b|决定|改为|改用",
    re.IGNORECASE,
)
_MIN_STEP_WORDS = 3


def plan_steps(text: str) -> list[str]:
    """The steps assistant `text` says it will take, as instructions ("Run the tests")."""
    steps = []
    for sentence in sentences(text):
        lead = _PLAN_LEAD.match(sentence)
        if lead is None or _FILLER.match(sentence):
            continue
        step = sentence[lead.end() :].strip().rstrip(":").strip()
        if len(content_words(step)) < _MIN_STEP_WORDS or sentence.rstrip().endswith(":"):
            # "Let me force-add it:" announces the next tool call; it plans nothing.
            continue
        steps.append(cap(step[:1].upper() + step[1:], 300))
    return steps


def decisions(text: str) -> list[str]:
    """The sentences of assistant text that state a decision or a finding."""
    found = []
    for sentence in sentences(text):
        if _FILLER.match(sentence) or sentence.rstrip().endswith(":"):
            continue
        if _DECISION_CUE.search(sentence) and len(content_words(sentence)) >= 5:
            found.append(cap(sentence, 300))
    return found
