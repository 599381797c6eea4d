"""What a sentence of the user's words does: a rule, a preference, a request, a fact, or chatter.

Recognised by the sentence's form, not by a short cue list: prohibitions ("never", "do not",
"no external network", "cannot use", "under no circumstances"), obligations and limits
("must", "has to", "at most", "within", "limited to", "only Python 3.11"), manner imperatives
("keep …", "use …", "report all times in …"), universal statements ("all prices go out in
…"), and preferences in any person ("I prefer", "User prefers", "the team likes"). Requests
are imperatives of work ("add", "fix", "build"), questions to the agent and explicit framing
("your task", "next task", "I need you to"). A fact is any other statement carrying a value.

Sentences are grouped into statements so that a rule keeps its value: "Budget cap is $500
total. Never exceed without explicit approval." is one statement, because the rule carries
no value of its own and the sentence before it does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from app.engine.extractive.sentence_forms import (
    ASKS_WORK,
    BINDS,
    CHOICE,
    COURTESY_FRAGMENT,
    FOR_ME,
    HABIT,
    MORE_WORK_VERBS,
    PREFERS,
    RULED_OUT,
    act_by_words,
)
from app.engine.extractive.text import sentence_lines


class Act(StrEnum):
    RULE = "rule"
    PREFERENCE = "preference"
    REQUEST = "request"
    FACT = "fact"
    CHATTER = "chatter"


@dataclass(frozen=True, slots=True)
class Statement:
    """One or more sentences of user text that belong together, and what they do."""

    text: str
    act: Act


_LEAD = r"^(?:(?:ok(?:ay)?|so|also|and|but|then|finally|note|important|reminder|fyi|btw|"
_LEAD += r"one more thing|quick note|heads up|oh|and also|plus|anyway|p\.?s\.?|before\s+i\s+forget|"
_LEAD += r"by\s+the\s+way|side\s+note|for\s+the\s+record|just\s+so\s+you\s+know|for\s+context|"
_LEAD += r"one\s+thing|real\s+quick|quick\s+one|fwiw|separately|additionally|lastly|"
_LEAD += r"(?:first|second|third)(?:ly)?)\s*[,:;.!—–-]*\s+)*"
_PLEASE = r"(?:please\s+|kindly\s+|always\s+|just\s+)*"
_LEAD_RE = re.compile(_LEAD, re.IGNORECASE)


def without_lead(text: str) -> str:
    """`text` without its lead-ins ("Also:", "Before I forget -", "Separately, ")."""
    # Not without an aside: "User prefers terse answers, at most 5 sentences" opens with
    # what it is about.
    return _LEAD_RE.sub("", text, count=1)


# Prohibitions win over every other reading: "I need you to never push" is a rule.
_PROHIBITION = re.compile(
    r"\b(?:never|do\s+not|don['’]t|doesn['’]t\s+allow|does\s+not\s+allow|must\s*n['’]?o?t|"
    r"must\s+never|mustn['’]t|shall\s+not|shan['’]t|should\s+not|shouldn['’]t|cannot|can['’]t|"
    r"can\s+not|may\s+not|not\s+(?:allowed|permitted|supposed|to\s+be)|under\s+no\s+circumstances|"
    r"in\s+no\s+case|no\s+one|nobody|forbid(?:s|den)?|prohibit(?:s|ed)?|disallow(?:s|ed)?|"
    # "The client won't allow any scraping", "Legal will not permit …".
    r"(?:won['’]t|will\s+not|wouldn['’]t|would\s+not)\s+(?:allow|permit|tolerate|accept)|"
    r"refrain|avoid(?:ing)?|without\s+(?:explicit\s+|prior\s+|written\s+|a\s+|an\s+|my\s+)?"
    r"(?:\w+\s+)?(?:approval|permission|asking|consent|sign-?off|ticket)|"
    # "Make no changes to prod.yaml", "Do nothing on prod-eu without …".
    r"\b(?:make|do|take)\s+(?:no|nothing)\b(?!\s+mistake)|"
    # Said of what is ruled out rather than to whom: "upgrading isn't an option", "a
    # rewrite is off the table"; and reported: "Legal asked us not to log emails".
    r"(?:not|isn['’]t|aren['’]t)\s+(?:an?\s+)?option|not\s+negotiable|non-negotiable|"
    r"out\s+of\s+the\s+question|off\s+the\s+table|off[\s-]limits|"
    # Said as an idiom of keeping away ("hold off on deploys", "keep your hands off"), or
    # as whose job it is not ("a human's job, not yours", "only I get to do").
    r"hold\s+off|hands\s+off|not\s+(?:yours|for\s+you(?:r\s+\w+)?|your\s+(?:job|call|decision)|"
    r"something\s+you\b)|"
    r"only\s+(?:i|me)\s+(?:get\s+to|can|may|am\s+allowed\s+to)|"
    r"(?:ask(?:ed|s)?|told|tells?|instructed|reminded|wants?|said)\s+(?:\w+\s+){0,2}not\s+to)\b",
    re.IGNORECASE,
)
# "Cannot" forbids when it is said of the agent ("you cannot use vim", "Cannot use any VM
# frameworks"); said of a thing it describes a bug ("`mode` of Evaluator can't work with
# string input"), which is the task, not a rule.
_INABILITY = re.compile(r"cannot|can['’]t|can\s+not", re.IGNORECASE)
_AGENT_SUBJECT = re.compile(
    r"\b(?:you|we|one|nobody|no\s+one|anyone|the\s+(?:user|agent|assistant|model|team))"
    r"(?:\s+\w+)?\s*$",
    re.IGNORECASE,
)


def _prohibits(text: str) -> bool:
    """Whether a sentence holds a prohibition addressed to the agent."""
    for found in _PROHIBITION.finditer(text):
        if _INABILITY.fullmatch(found.group(0)):
            before = _LEAD_RE.sub("", text[: found.start()]).strip()
            if before and not _AGENT_SUBJECT.search(before):
                continue
        return True
    return False


# "No external network access.", "No emojis.", "No more than 5 …": a prohibition by itself.
_NO_START = re.compile(
    _LEAD + r"(?:absolutely\s+|strictly\s+)?(?:no|zero|nothing|none)\s+"
    r"(?!,|problem|worries|thanks|idea|luck|way|rush|biggie|clue|change|progress|difference|longer|need|one\b|doubt|kidding|wonder)[\w`]",
    re.IGNORECASE,
)
_OBLIGATION = re.compile(
    r"\b(?:must|shall|should|ought\s+to|ha(?:ve|s)\s+to|needs?\s+to|required?|requirements?|"
    r"mandatory|obligatory|always|only|minimal|minimum|minimi[sz]e|at\s+(?:most|least)|no\s+(?:more|less|fewer|later|"
    r"earlier|longer)\s+than|not\s+(?:more|less|exceed)|exceed(?:s|ing)?|maximum|minimum|max|"
    r"limit(?:s|ed)?|cap(?:ped)?|budget|within\s+(?:\d|\$|the\s+(?:budget|limit))|up\s+to|"
    r"strictly|whatever\s+happens|"
    r"at\s+all\s+times|make\s+sure|be\s+sure|ensure|insists?|stick\s+(?:to|with)|keep|stay|"
    r"allowed|permitted|compatib(?:le|ility)|unchanged|read-only|exactly|"
    # A pin or a bound said as a fragment: "stuck on attrs 3.10", "nothing newer".
    r"stuck\s+(?:on|with)|pinned\s+(?:to|at|on)|locked\s+(?:to|at|on)|frozen\s+at|"
    r"nothing\s+(?:newer|older|else|more|less|higher|lower|bigger|larger|later|earlier|beyond)|"
    # A bound said as a comparison with a value ("can't be larger than 51 KB", "stays below
    # $3300"), a value kept as it is ("staying on 3.11 until …"), or the one allowed
    # source ("from the mirror and nowhere else").
    r"(?:larger|bigger|smaller|longer|shorter|higher|lower|more|less|fewer|greater|heavier|"
    r"slower|faster|later|earlier|older|newer)\s+than\s+(?=[$\d])|"
    r"(?:stays?|staying|remains?|remaining|kept|keeps?)\s+(?:below|under|above|over|within|"
    r"at|on|there|put|as\s+is)|(?:below|under|above|beneath)\s+(?=[$\d])|"
    r"nowhere\s+else|no\s+other|exclusively|solely|"
    # A bound said as what the value is: "Python 3.9 is the floor", "The deadline is
    # Friday 17:00", "Postgres 14 is the oldest we support", "We target 99.9% uptime".
    r"deadline|ceiling|(?:is|as)\s+the\s+floor|(?:oldest|newest|lowest|highest)\s+(?:\w+\s+)?"
    r"(?:we|you)\s+(?:support|allow|accept)|we\s+target|timeout\s+is)\b",
    re.IGNORECASE,
)
# A short label before a colon: "Requirement:", "Next task:", "Round 5:", "FYI:".
_LABEL = re.compile(r"^([A-Za-z][\w '-]{0,30}?)\s*:\s+(?=\S)")
_LABELLED = {
    "requirement": Act.RULE,
    "requirements": Act.RULE,
    "rule": Act.RULE,
    "rules": Act.RULE,
    "constraint": Act.RULE,
    "constraints": Act.RULE,
    "important": Act.RULE,
    "warning": Act.RULE,
    "task": Act.REQUEST,
    "goal": Act.REQUEST,
    "request": Act.REQUEST,
    "todo": Act.REQUEST,
    "objective": Act.REQUEST,
    "aim": Act.REQUEST,
    "mission": Act.REQUEST,
    "list": Act.REQUEST,
    "job": Act.REQUEST,
    "assignment": Act.REQUEST,
    "milestone": Act.REQUEST,
    "priority": Act.REQUEST,
    "preference": Act.PREFERENCE,
    "preferences": Act.PREFERENCE,
    "fact": Act.FACT,
    "fyi": Act.FACT,
    "context": Act.FACT,
}
# Chinese rules and preferences: must, do not, keep, only, cannot, forbidden, make sure …
_CJK_RULE = re.compile(
    r"必须|不要|保持|只能|只用|不能|不得|禁止|务必|一定要|请勿|不许|应该|避免|确保|仅"
)
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_CJK_REQUEST = re.compile(r"^(?:请|帮我|麻烦|你(?:能|可以))")
_CJK_PREFERENCE = re.compile(r"喜欢|偏好|更喜欢|希望|尽量|优先")
# "Always …" binds every later turn, whatever verb follows it.
_ALWAYS = re.compile(r"\b(?:always|at\s+all\s+times|every\s+time)\b", re.IGNORECASE)
# The words that bound a request ("only for GET", "the minimal changes", "at most 3").
_BOUND = re.compile(
    r"\b(?:only|minimal|minimum|at\s+(?:most|least)|no\s+more\s+than|must|limit(?:ed)?|"
    r"within\s+\d|exceed\w*|unchanged|read-only)\b",
    re.IGNORECASE,
)
# Modal words whose subject decides: "you must", "the export must" are rules; "it should be
# True" in a bug report is not.
_MODAL = re.compile(
    r"\b(?:must|shall|should|ought\s+to|ha(?:ve|s)\s+to|needs?\s+to)\b", re.IGNORECASE
)
_NOT_A_RULE_SUBJECT = re.compile(
    r"(?:^|\s)(?:it|this|that|which|there|he|she|they|these|those|what|who|something|"
    r"everything works|the (?:bug|issue|error|problem|test|output|result)s?)\s*$",
    re.IGNORECASE,
)
_PRONOUN_SUBJECT = re.compile(r"it|this|that|everything", re.IGNORECASE)
_BE_NEXT = re.compile(r"\s+(?:not\s+)?(?:be|been|have\s+been)\b", re.IGNORECASE)
# "Should" is also how bug reports say what they expect ("the attribute should be
# optional"); it makes a rule only when addressed to the agent or stated as a norm.
_SHOULD_SUBJECT = re.compile(
    r"^(?:.*\b)?(?:you|we|i|all\s+\w+|every\s+\w+|each\s+\w+|any\s+\w+|no\s+\w+|your\s+\w+|"
    r"our\s+\w+|new\s+\w+|responses?|answers?|replies|commits?|(?:the\s+)?(?:code|output|"
    r"summary|answer|response|reply|commit|change|fix|solution|implementation|"
    r"function|functions|tests)|"
    # The things the agent writes, said of their style: "Comments in `x` should be sparse".
    r"(?:comments?|docstrings?|names?|variables?|messages?|log\s+lines?|logs?|lines?|prs?|"
    r"pull\s+requests?|docs|imports?|type\s+hints?|errors?|commit\s+\w+)"
    r"(?:\s+(?:in|for|of|on)\s+\S+)?)$",
    re.IGNORECASE,
)
# A generic, quantified subject states a norm: "All prices go out in EUR", "Every endpoint
# returns JSON".
# So does a universal pronoun narrowed to what it covers: "Anything that emails customers
# needs my go-ahead", "Everything in vendor/ stays as is" ("Everything works" states none).
_UNIVERSAL = re.compile(
    _LEAD + r"(?:(?:all|every|each|any|no)\s+\w|(?:anything|everything|anyone|everyone|"
    r"anybody|everybody|whatever|whoever)\s+(?:that|which|who|in|under|from|on|touching|"
    r"involving)\b)",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer(?:s|red|ably|ence|ences)?|rather|favou?r(?:s|ed)?|likes|loves?|hates?|"
    r"dislikes?|wants?|wish(?:es)?|ideally|would\s+like|i['’]d\s+like|i\s+like|fond\s+of|"
    r"happier\s+with|style|convention|appreciate\w*|would\s+be\s+(?:nice|great|good)|"
    r"leans?\s+towards?|more\s+comfortable|(?:if|where|when(?:ever)?)\s+possible|"
    # A liking said in other words: "I tend to like", "would make me happy", "that's my
    # taste", "reads best as …", "I'd go with X over Y".
    r"(?:i|we)\s+(?:\w+\s+){1,2}(?:like|love|enjoy)|(?:would|will|does|do)\s+make\s+me\s+"
    r"(?:happy|glad)|makes\s+me\s+(?:happy|glad)|(?:my|our)\s+taste|to\s+my\s+taste|"
    r"reads?\s+(?:best|better|nicer|cleaner)|(?:i['’]d|i\s+would|we['’]d|we\s+would)\s+"
    r"(?:go\s+with|pick|choose|opt\s+for|use)|"
    r"(?:i|we|they|he|she|the\s+\w+)\s+finds?\b.{1,80}\b(?:easiest|easier|best|better|clearer|"
    r"nicer|cleaner|simpler|more\s+readable))\b",
    re.IGNORECASE,
)
# Imperatives about how to work (manner), as opposed to what work to do.
_MANNER_VERB = re.compile(
    _LEAD
    + _PLEASE
    + r"(?:keep|use|target|go\s+with|stick\s+with|opt\s+for|report|respond|reply|answer|"
    r"write\s+(?:in|with|all|every|each|only|comments|commit|tests?\s+(?:in|with|for\s+every))|stick|follow|name|label|"
    r"format|limit|include|exclude|prefer|favou?r|avoid|ensure|make\s+sure|remember|treat|"
    r"ask|wait|double-check|put|store|return|mention|cite|stay|speak|output|round|sort|"
    r"indent|quote|log|print|comment|document\s+every|run\s+\S+\s+before|check\s+with|"
    r"tell\s+me\s+before|confirm|respect|preserve|retain|leave)\b"
    # "Output of this snippet is 344" names a thing; it asks nothing.
    r"(?!\s+(?:of|is|are|was|were|has|had)\b)",
    re.IGNORECASE,
)
# What to do when something happens, said of stopping to check: "If a command would touch
# prod, stop and ask me" is a rule; "stop the server" alone is work.
_HALT = re.compile(
    _LEAD + _PLEASE + r"(?:stop|pause|halt|abort|bail\s+out|escalate|ping\s+me|check\s+with)\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"^(?:\d+[.)]\s*)?(?:when(?:ever)?|if|before|after|once|while|in\s+case)\b[^,]{3,100},\s*(.+)$",
    re.IGNORECASE | re.DOTALL,
)
_REQUEST_FRAME = re.compile(
    _LEAD + r"(?:(?:can|could|would|will)\s+you|please|kindly|i(?:\s+(?:need|want|would\s+like)|"
    r"\s*['’]d\s+like)\s+(?:you\s+)?to|let['’]?s|your\s+(?:task|job|goal|mission|assignment)|"
    r"the\s+(?:goal|task|objective|aim|plan)\b|(?:next|new|first|main|current|today['’]s)\s+"
    r"(?:task|step|goal|job)|task\s*:|goal\s*:|todo\s*:|go\s+ahead\s+and|time\s+to|"
    r"we\s+(?:need|have|want)\s+to|we\s+(?:need|want)\s+(?:a|an|some)\s|"
    r"what\s+(?:i|we)\s+(?:need|want)\s+is|now\s+(?:we\s+)?(?:need\s+to\s+)?|"
    # The work said as what remains or what is needed: "What's left is porting X", "The
    # thing I actually need today is a CSV export", "I'd love for you to write …".
    r"what['’]?s\s+left|what\s+(?:is\s+left|remains)|(?:the\s+)?(?:one\s+)?(?:thing|part|bit)"
    r"\s+(?:i|we)\s+(?:\w+\s+)?(?:need|want)(?:\s+\w+)?\s+is|(?:i['’]d|i\s+would)\s+love"
    r"\s+(?:for\s+)?(?:you\s+)?to|(?:main|primary|overall)\s+(?:objective|aim)|"
    r"next\s+on\s+the\s+list|objective\s*:|"
    # "The next piece of work is a dashboard page".
    r"(?:the\s+)?(?:next|first|main)\s+(?:piece|bit|item|chunk)\s+of\s+work)",
    re.IGNORECASE,
)
_WORK_VERBS = (
    r"(?:add|build|create|implement|fix|write|make|port|refactor|migrate|"
    r"investigate|find|debug|update|change|remove|delete|set\s+up|setup|deploy|run|test|look|"
    r"check|explain|help|finish|solve|work|start|document|rename|move|clean|improve|optimi[sz]e|"
    r"speed|support|handle|extract|split|merge|convert|replace|review|analy[sz]e|read|open|"
    r"install|upgrade|configure|generate|design|draft|prepare|continue|resume|go|try|search|"
    r"show|list|tell|summari[sz]e|compare|benchmark|profile|measure|verify|reproduce|commit|"
    r"push|release|publish|send|call|get|give|put|ship|wire|hook|connect|enable|disable|"
    r"expose|drop|revert|restore|bump|pin|lint|format|scaffold|sketch|plan|describe|identify|"
    r"determine|figure|trace|inspect|explore|study|learn|understand|websearch|google)\b"
)
# Not before a colon: "Update: the port = 80" labels what follows, it asks for no work;
# not a verb's noun with a duty after it: "Support for Python 3.9 must be preserved".
_WORK_VERB = re.compile(
    _LEAD
    + _PLEASE
    + _WORK_VERBS
    + r"(?!\s*:)(?!\s+(?:for|of)\b[^!?]*\b(?:must|shall|has\s+to|needs?\s+to|is|are)\b)"
    # Nor a noun compound that is the subject of a duty: "Build time should stay under
    # 10 minutes", "Run time must stay below 18 hours".
    r"(?!\s+\w+\s+(?:should|must|shall|has\s+to|needs?\s+to|can['’]t|cannot|stays?)\b)",
    re.IGNORECASE,
)
# A value set again, said as an imperative ("Change of plan for the port, make it 55"):
# it states the value, like a fact does, and may replace the earlier one.
_SETS_VALUE = re.compile(
    r"\b(?:make|set|change|bump|move|switch|turn)\s+(?:it|that|this|them)\s+(?:to\s+|into\s+)?\S",
    re.IGNORECASE,
)
# The work asked for after the description of it: "The webhook has to be retried on
# failure, please build that."
_TRAILING_REQUEST = re.compile(
    r"[,;:.—–-]\s*(?:so\s+|and\s+)?(?:please|kindly|can\s+you|could\s+you)\s+"
    + _WORK_VERBS
    + r"\s+(?:that|this|it|them|one)\b",
    re.IGNORECASE,
)
# How to present things: "Show me money as CHF", "display dates in ISO 8601".
_PRESENTATION = re.compile(
    _LEAD + _PLEASE + r"(?:show|display|present|give|express)\s+(?:me\s+|us\s+)?"
    r"(?:\w+\s+){1,3}(?:as|in)\s+\S",
    re.IGNORECASE,
)
# A question proposing work to the agent ("How about you add caching?", "Could we maybe
# wire it in?"): whatever the question word, the agent or "we" does the work.
_PROPOSES_WORK = re.compile(r"\b(?:you|we)\s+(?:\w+\s+)?" + _WORK_VERBS, re.IGNORECASE)
# A short aside before the statement proper: "hey,", "Not related, but", "ah one thing I
# forgot to mention:", "Whatever you do,". Up to eight words without a value, then a
# comma, colon, semicolon or dash; what follows is read on its own.
_ASIDE = re.compile(r"^\s*((?:[^\s,:;—–]+\s+){0,7}[^\s,:;—–]+?)\s*(?:[,:;—–]|\s-)\s*(?=\S)")
_CHATTER = re.compile(
    r"^(?:(?:ok(?:ay)?|k|sure|yes|yep|yeah|no|nope|thanks?(?:\s+you)?(?:\s+(?:so\s+much|a\s+lot))?|"
    r"thx|ty|great|nice|cool|good|perfect|awesome|excellent|fine|alright|right|got\s+it|"
    r"sounds\s+good|looks\s+good(?:\s+to\s+me)?|lgtm|hmm+|ah|oh|wow|indeed|exactly|agreed|"
    r"understood|noted|done|go\s+on|go\s+ahead|carry\s+on|keep\s+going|keep\s+it\s+up|"
    r"continue|proceed|next|that['’]?s\s+(?:all|it|fine|great|good)(?:\s+for\s+now)?|"
    r"(?:carry\s+on|continue|proceed|go\s+on)\s+with\s+(?:what\s+you\s+were\s+doing|the\s+plan|"
    r"it|that|this|your\s+work)|quick\s+note(?:\s+before\s+you\s+continue)?|one\s+more\s+thing|"
    r"thanks\s+for\s+the\s+update|anyway)(?:[\s,.!:;-]+|$))+$",
    re.IGNORECASE,
)
# A value: numbers, paths, identifiers, code spans, quoted text, money, versions, hosts.
_VALUE = re.compile(
    # Money ends on a digit or its unit: "$700." at a sentence's end is "$700".
    r"`[^`]+`|\"[^\"]{2,}\"|\$\s?\d(?:[\d,.]*\d)?\w*|"
    # An image or package tag without backticks: "python:4.2-willow", "redis:7".
    r"\b[a-z][\w.-]*:\d[\w.-]*[\w]|\b[a-z][\w.-]*:\d\b|"
    # What "X = Y" sets: "the log library = tenacity".
    r"(?<==\s)[a-z0-9][\w.:/@-]*[\w/]|"
    r"\b[\w-]+(?:\.[\w-]+)*\.(?:internal|example|com|org|net|io|dev|local|json|py|ts|js|md|"
    r"yaml|yml|toml|sh|mk|ex|exs|rs|go|java|rb|sql|txt|csv|html|css)\b|"
    r"(?:\B/|\b[\w.-]+/)[\w./-]*|"
    # A kebab-case name ("acme-exports-eu"), not an English compound ("end-to-end").
    r"\b[a-z0-9]+(?:-(?!(?:to|of|the|in|and|by|a|on|for|at)-)[a-z0-9]+){2,}\b|"
    r"\b[A-Za-z]+[_]\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z]{2,}[-_]?\d+\b|\b[A-Za-z]+\d+[\w-]*\b|"
    r"\b\d[\d:.,/-]*\d\b|\b\d\b|"
    r"\b[A-Z][A-Z0-9]{2,}\b|(?<=[a-z,=] )[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*|"
    # A name opening a sentence ("Ada Quint owns the release", also after a lead-in:
    # "Also: Ada Quint owns …"): two capitalised words before a lowercase one, not a
    # capitalised article or pronoun.
    r"(?:^|(?<=[:;] ))(?!(?:The|A|An|This|That|These|Those|Our|My|Your|Their|We|I|It|All|"
    r"Every|Each|No|Please|If|When|Then|Also|And|But|So|Now)\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+(?=\s+[a-z])"
)
_ANAPHOR_OR_ELLIPSIS = re.compile(
    r"^(?:it|this|that|there|these|those|they|them|such|so|never|always|only|no|not|don['’]t|"
    r"do\s+not|cannot|can['’]t|must|should|keep|ask|check|make\s+sure|and|but|also|otherwise|"
    r"except|unless|if|when|else)\b",
    re.IGNORECASE,
)
_REFERS_BACK = re.compile(r"\b(?:it|this|that|there|them|these|those|such|the same)\b", re.I)
_QUESTION_TO_AGENT = re.compile(
    r"^(?:(?:can|could|would|will)\s+you|how\s+(?:do|can|would|should)\s+(?:i|we|you)|"
    r"what|why|where|which|when|is\s+there|are\s+there|do\s+you)\b",
    re.IGNORECASE,
)


def values_in(text: str) -> tuple[str, ...]:
    """The specific values a text carries (numbers, paths, identifiers, names), in order."""
    found = (match.group(0).strip('`"') for match in _VALUE.finditer(text))
    # "hey, The supplier's …", "also, Please …": a sentence's first word after a lead-in
    # keeps its capital; it names nothing.
    return tuple(v for v in found if v.casefold() not in _NOT_NAMES)


def split_aside(text: str) -> tuple[str, str] | None:
    """(aside, the rest) when `text` opens with a short aside (`_ASIDE`) and at least three
    words follow it."""
    found = _ASIDE.match(text)
    if found is None or values_in(found.group(1)):
        return None
    rest = text[found.end() :]
    if len(rest.split()) < 3:
        return None
    return found.group(1), rest


def _label_kind(label: str) -> Act | None:
    """What a label says follows: by its last word ("Next task:"), or its first when the
    rest says which one ("Task for this afternoon:", "Your next assignment:")."""
    words = label.casefold().split()
    return _LABELLED.get(words[-1]) or (_LABELLED.get(words[0]) if len(words) > 1 else None)


def classify(sentence: str, by_words_too: bool = True) -> Act:
    """What one sentence of user text does. Its form decides; a sentence of no known form
    is read by its words (`act_by_words`) unless `by_words_too` is false."""
    text = sentence.strip()
    label = _LABEL.match(text)
    labelled = label is not None and _label_kind(label.group(1)) is not None
    # A label that says what follows ("Main objective: …") is no aside.
    aside = None if labelled else split_aside(text)
    if aside is not None:
        # "Not related, but we need to migrate X", "hey, use tabs": the aside is how the
        # user leads in, the rest is what they say. It decides when it says more than a
        # fact ("Use tabs, not spaces" stays the rule its whole reads as).
        rest = classify(aside[1], by_words_too=False)
        # An aside that binds by itself ("If possible, write the tests with X") keeps
        # the whole's reading.
        binds = _PREFERENCE.search(aside[0]) or _prohibits(aside[0]) or _ALWAYS.search(aside[0])
        if rest in (Act.RULE, Act.PREFERENCE, Act.REQUEST) and not binds:
            return rest
    if label and len(text[label.end() :].split()) >= 3:
        # "Requirement: …", "Task: …", "Round 5: try …": the label may say what it is.
        said = _label_kind(label.group(1))
        rest = classify(text[label.end() :], by_words_too)
        if said is None or (rest in (Act.RULE, Act.PREFERENCE) and said is Act.FACT):
            return rest
        return said
    words = text.split()
    has_value = bool(values_in(text))
    cjk = len(_CJK_CHAR.findall(text))
    short = len(words) <= 2 and not has_value and len(text) < 40 and cjk < 4
    # "keep at it", "go on then": a verb with no object or value says nothing to keep.
    bare = len(words) <= 5 and not has_value and len(_content(text)) <= 1 and cjk < 4
    if _NO_START.match(text) and not _CHATTER.match(text) and len(words) >= 2:
        # "no sudo": two words, a prohibition all the same.
        return Act.RULE
    if _CHATTER.match(text) or short or bare:
        return Act.CHATTER
    if _prohibits(text) or _ALWAYS.search(text) or RULED_OUT.search(text):
        return Act.RULE
    if _CJK_RULE.search(text):
        return Act.RULE
    if _CJK_PREFERENCE.search(text):
        return Act.PREFERENCE
    if cjk >= 4 and _CJK_REQUEST.match(text):
        return Act.REQUEST
    if ASKS_WORK.search(text):
        # "I want it fixed", "test_upload needs fixing": work, though "want" is a liking.
        return Act.REQUEST
    if _PREFERENCE.search(text) and not _REQUEST_FRAME.match(text):
        return Act.PREFERENCE
    works = _WORK_VERB.match(text) or MORE_WORK_VERBS.match(text)
    if PREFERS.search(text) or (
        not works and (CHOICE.match(text) or COURTESY_FRAGMENT.match(text))
    ):
        return Act.PREFERENCE
    if _MANNER_VERB.match(text) or _PRESENTATION.match(text):
        return Act.RULE
    if works and HABIT.search(text):
        # "Run the linter before each commit": work done as a habit binds every turn.
        return Act.RULE
    # "Also if …, stop and ask me": the lead-in is no part of the condition.
    condition = _CONDITION.match(without_lead(text))
    if condition and (_MANNER_VERB.match(condition.group(1)) or _HALT.match(condition.group(1))):
        # "When you hit a brute-force step, please use a script": a rule with a condition.
        return Act.RULE
    if condition and (
        _REQUEST_FRAME.match(condition.group(1)) or _WORK_VERB.match(condition.group(1))
    ):
        return Act.REQUEST
    if has_value and _SETS_VALUE.search(text):
        return Act.FACT
    if _REQUEST_FRAME.match(text) or works or _TRAILING_REQUEST.search(text):
        return Act.REQUEST
    # A duty word inside a condition ("If the script requires a file, search the repo")
    # says when, not what binds: the main clause decides.
    main_clause = condition.group(1) if condition else text
    if _is_obligation(text) or _UNIVERSAL.match(text) or BINDS.search(main_clause):
        return Act.RULE
    if FOR_ME.search(text):
        return Act.PREFERENCE
    if text.endswith("?") and (_QUESTION_TO_AGENT.match(text) or _PROPOSES_WORK.search(text)):
        return Act.REQUEST
    said = Act.FACT if has_value or len(_content(text)) >= 4 or cjk >= 4 else Act.CHATTER
    by_words = act_by_words(text) if by_words_too else None
    return Act(by_words) if by_words else said


_STRONG = re.compile(
    r"\b(?:never|always|must|mustn['’]t|cannot|can['’]t|only|do\s+not|don['’]t|not\s+allowed|"
    r"under\s+no\s+circumstances|forbid\w*|prohibit\w*|required?|at\s+(?:most|least))\b|^no\s",
    re.IGNORECASE,
)
_ADVICE = re.compile(
    r"\b(?:recommend\w*|might|may|could|consider|try|tips?|it\s+is\s+easy|feel\s+free)\b",
    re.IGNORECASE,
)


def rule_strength(text: str) -> int:
    """How firmly a rule binds: 2 for never/always/must/only …, 1 otherwise, 0 for advice."""
    strength = 2 if _STRONG.search(text) else 1
    return max(0, strength - (1 if _ADVICE.search(text) else 0))


def bounds_the_work(text: str) -> bool:
    """True when a request also sets a limit ("make the minimal changes to non-test
    files", "add caching, but only for GET"): it is kept as a rule as well."""
    return bool(_prohibits(text) or _NO_START.match(text) or _BOUND.search(text))


_STAYS_WITHIN = re.compile(
    r"\b(?:stays?|remain|be|keep)\s+(?:below|under|within|above|at\s+(?:most|least))\s+[$\d]",
    re.IGNORECASE,
)


def _is_obligation(text: str) -> bool:
    found = _OBLIGATION.search(text)
    if found is None:
        return False
    modal = _MODAL.search(text)
    if modal is not None and modal.start() == found.start():
        # "It should be True" describes a bug; "Responses must be short" is a rule.
        subject = re.sub(_LEAD, "", text[: modal.start()].strip(), flags=re.I).strip(" ,")
        if not subject:
            return True
        if modal.group(0).casefold() == "should":
            # "Build time should stay under 10 minutes": a bound after it binds whatever
            # the subject; "the attribute should be optional" has none.
            bound = _STAYS_WITHIN.search(text, modal.end())
            return _SHOULD_SUBJECT.match(subject) is not None or bound is not None
        if _PRONOUN_SUBJECT.fullmatch(subject) and not _BE_NEXT.match(text[modal.end() :]):
            # "It has to run offline", "This needs to fit in 512 MB": the thing being built
            # must do something. "It must be a race" guesses; it binds nothing.
            return True
        return _NOT_A_RULE_SUBJECT.search(subject) is None
    return True


# A pasted report the agent is to act on (an issue, a PR description, a bug report): its
# sentences describe the problem ("There is an issue when … only one item", "No runtime
# errors thrown."); they are the task's content, kept in the Goal, not rules for the agent.
_QUOTED_DOCUMENT = re.compile(
    r"^\s*<(pr_description|issue(?:_description)?|problem_statement|bug_report|github_issue)>"
    r"(.*?)</\1>",
    re.IGNORECASE | re.DOTALL | re.MULTILINE,
)


def addressed_statements(text: str) -> list[Statement]:
    """`statements(text)`, with the rules and preferences of a pasted report (inside
    `<pr_description>`, `<issue>` …) read as facts about the task."""
    found = statements(text)
    quoted = {s.text for block in _QUOTED_DOCUMENT.finditer(text) for s in statements(block[2])}
    if not quoted:
        return found
    return [
        Statement(s.text, Act.FACT)
        if s.text in quoted and s.act in (Act.RULE, Act.PREFERENCE)
        else s
        for s in found
    ]


def statements(text: str) -> list[Statement]:
    """The statements of user `text`, in order: sentences, with a rule that has no value
    of its own joined to the sentence before it that does (and the other way round)."""
    found: list[Statement] = []
    for line in sentence_lines(text):
        previous: tuple[str, Act] | None = None
        for sentence in line:
            act = classify(sentence)
            if (
                previous is not None
                # A fragment read as a rule by a word ("the PR size limit.") still only
                # names the subject when it is a noun phrase, not an imperative.
                and (
                    previous[1] in (Act.CHATTER, Act.FACT)
                    or _NOUN_PHRASE.match(_topic(previous[0]))
                )
                and _comments_on_topic(previous[0], sentence)
            ):
                # "Oh, the bastion SSH port. That's 4411 now.": the fragment names what the
                # statement is about; apart, one has no value and the other no subject.
                joined = f"{previous[0]} {sentence}"
                if found and found[-1].text == previous[0]:
                    found[-1] = Statement(joined, act)
                else:
                    found.append(Statement(joined, act))
                previous = (joined, act)
                continue
            if previous is not None and _belongs_to_previous(previous, sentence, act):
                joined = f"{previous[0]} {sentence}"
                merged_act = _merged_act(previous[1], act)
                found[-1] = Statement(joined, merged_act)
                previous = (joined, merged_act)
                continue
            found.append(Statement(sentence, act))
            previous = (sentence, act)
    return found


# A statement whose subject is only "that" or "it", carrying a value: "That's 4411 now.",
# "It's 4.2 as of this week."
_POINTS_BACK_WITH_VALUE = re.compile(
    r"^(?:that|it|this)(?:['’]s|\s+is|\s+will\s+be|['’]ll\s+be|\s+(?:has|have)\s+"
    r"(?:moved|changed|become|been))\b",
    re.IGNORECASE,
)


# A word that makes a fragment a clause of its own ("that works.", "I ran the suite."): a
# noun phrase has none.
_CLAUSE_WORD = re.compile(
    r"\b(?:is|are|was|were|be|been|am|has|have|had|do|does|did|can|could|will|would|should|"
    r"must|may|might|works?|worked|ran|runs?|i|we|you|they|he|she|it|that|this)\b|n['’]t\b",
    re.IGNORECASE,
)


# In a noun phrase a pronoun opens a relative clause: "the currency I read amounts in".
_NOUN_PHRASE = re.compile(r"^(?:the|our|my|your|a|an)\s", re.IGNORECASE)
_CLAUSE_PRONOUN = re.compile(r"\b(?:i|we|you|they)\b", re.IGNORECASE)


def _is_clause(fragment: str) -> bool:
    if _NOUN_PHRASE.match(fragment):
        fragment = _CLAUSE_PRONOUN.sub(" ", fragment)
    return _CLAUSE_WORD.search(fragment) is not None


def _topic(before: str) -> str:
    """A fragment without its lead-ins and asides: what it names."""
    fragment = without_lead(before.strip())
    aside = split_aside(fragment)
    if aside is not None:
        # "Note to self and to you: Oh, the progress interval." names it after the aside.
        fragment = without_lead(aside[1])
    return fragment


def _comments_on_topic(before: str, sentence: str) -> bool:
    """Whether `sentence` says, with a value, something about the short fragment before it
    ("The deploy window? It's 18:00 now."): a noun phrase of a few words, no clause."""
    fragment = _topic(before)
    return (
        len(fragment.split()) <= 8
        and not _is_clause(fragment)
        and bool(_content(fragment))
        and fragment.rstrip()[-1:] in ".?:"
        and not _CHATTER.match(fragment)
        and _POINTS_BACK_WITH_VALUE.match(sentence.strip()) is not None
        and not _CHATTER.match(sentence.strip())
        # A value, or one plain word for it: "That's respx now."
        and (bool(values_in(sentence)) or len(sentence.split()) <= 4)
    )


def _belongs_to_previous(previous: tuple[str, Act], sentence: str, act: Act) -> bool:
    before, before_act = previous
    if len(before) > 300 or before_act is Act.CHATTER or act is Act.CHATTER:
        return False
    rule_like = (Act.RULE, Act.PREFERENCE)
    if act in rule_like and before_act is not Act.REQUEST and values_in(before):
        # "Budget cap is $500 total. Never exceed without explicit approval.", "Production
        # is krill3. Never deploy there on a Friday.": the rule leans on the sentence
        # before (it points back, or starts without a subject), and has no value of its own.
        refers_back = _REFERS_BACK.search(sentence[:40]) is not None
        leans = refers_back or before_act is Act.FACT or bool(_ANAPHOR_OR_ELLIPSIS.match(sentence))
        return leans and (refers_back or not values_in(sentence))
    if before_act in rule_like and not values_in(before) and values_in(sentence):
        # "Never exceed the budget. The budget is $500." shares a word with its rule.
        return act is Act.FACT and bool(_content(before) & _content(sentence))
    return False


def _merged_act(first: Act, second: Act) -> Act:
    for act in (Act.RULE, Act.PREFERENCE, Act.REQUEST, Act.FACT):
        if act in (first, second):
            return act
    return Act.CHATTER


_STOPWORDS_TEXT = (
    "the a an and or of to in on for with from by at is are was were be been it its this "
    "that these those as into than then so not no do does did have has had will would "
    "should could can may might must you your we our us i my me they them there here now "
    "just also any all each every some such very more most less least only about one "
    "thing things quick note fyi btw heads anyway reference please what which who whom "
    "whose where when how it's that's what's there's here's"
)
_STOPWORDS_TEXT += " hey hi hello ah oh hmm yo ok okay btw but yet though although"
# "per-query" and "per-migration" share no subject: "per" says how, like "each".
_STOPWORDS_TEXT += " per"
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_NOT_NAMES_TEXT = (
    "actually correction update heads also quick turns just anyway sorry hey oh ah ok okay "
    "please note reminder important however instead"
)
_NOT_NAMES = _STOPWORDS | frozenset(_NOT_NAMES_TEXT.split())


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z'-]{2,}", text.casefold()) if w not in _STOPWORDS}


def content_words(text: str) -> frozenset[str]:
    """The words of `text` that say what it is about (no stopwords, no values), reduced to
    a rough stem so "answers" and "answer" match."""
    without_values = _VALUE.sub(" ", text)
    return frozenset(_stem(w) for w in _content(without_values))


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 5:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            # "logging" and "log", "bumped" and "bump": a doubled last consonant is one.
            if (
                suffix != "s"
                and len(stem) >= 4
                and stem[-1] == stem[-2]
                and stem[-1] not in "aeiouls"
            ):
                stem = stem[:-1]
            return stem
    return word
