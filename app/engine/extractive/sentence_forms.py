"""Sentence forms that bind or ask beyond the modal words: what a sentence says of a thing.

Users state rules as a verdict on a thing ("Pushing to main is a no-go", "The Makefile is
frozen", "eval() is banned"), as whose call it is ("Rebooting prod is my call alone"), as
an approval to ask for ("Ping me before touching db7"), as a consequence ("I'll be upset if
staging gets dropped"), as a habit ("Run the linter before each commit"), or as a tail on a
fragment ("Explanations in plain English, no jargon"). Preferences come as a choice
("Tabs over spaces"), a fragment with a courtesy ("Terse answers, please"), or a verdict
about oneself ("Shorter answers are better for me", "Camel case looks wrong to me"). Work is
asked as what a thing needs ("test_upload needs fixing", "I want it fixed", "An index on
orders.created_at is needed"), as a priority ("Priority one is porting …", "Up next, …") or
as a hope ("I'm hoping you can port …").
"""

from __future__ import annotations

import re

# A verdict or ownership that rules a thing out, or puts it in the user's hands alone.
RULED_OUT = re.compile(
    r"\b(?:dont|no-go|no\s+go|(?:is|are|gets?)\s+(?:strictly\s+)?(?:banned|forbidden|taboo|"
    r"frozen|locked|untouchable|not\s+ok(?:ay)?|not\s+acceptable|unacceptable|"
    r"not\s+welcome|out\s+of\s+bounds|out(?=\s+(?:for|here|this|in\s+this)\b|\s*[.!;,]|\s*$))|"
    r"bans?|banned|unacceptable|"
    r"(?:is|are)\s+a\s+(?:big\s+|hard\s+|firm\s+|definite\s+)?no\b|"
    r"(?:my|the\s+user['’]s|our)\s+(?:call|decision)\s+(?:alone|only)|(?:is|are)\s+my\s+call|"
    r"(?:nobody|no\s+one|anyone|none\s+of\s+you)\s+(?:\w+\s+){0,2}but\s+me|"
    r"(?:check|confirm|clear\s+it|run\s+it)\s+(?:with|by)\s+me|(?:go|goes)\s+through\s+me|"
    # Said as what happens to the thing done anyway: "Edits outside src/ will be reverted".
    r"(?:gets?|will\s+be|are|is)\s+(?:automatically\s+)?(?:rejected|reverted|refused|denied|"
    r"rolled\s+back)|(?:aren['’]t|isn['’]t|is\s+not|are\s+not)\s+done\b|"
    r"needs?\s+(?:a\s+)?(?:second\s+pair\s+of\s+eyes|review|sign-?off|approval)|"
    r"(?:ping|ask|tell|warn|notify)\s+me\s+(?:first|before)|let\s+me\s+know\s+before|"
    r"(?:needs?|requires?|with(?:out)?)\s+my\s+(?:ok|okay|approval|sign-?off|go-?ahead|consent)|"
    r"(?:i['’]ll|i\s+will|i['’]d|i\s+would)\s+be\s+(?:very\s+|really\s+)?(?:upset|annoyed|"
    r"angry|furious|unhappy|mad|disappointed)|(?:do\s+not|don['’]t)\s+want\s+to\s+see|"
    # "The deploy window closes at 16:30, nothing ships after that."
    r"(?<=[,;:—–-]\s)(?:nothing|none|no\s+\w+)\s+(?:\w+s|gets?|goes|may|can|should|will)\b|"
    # "Explanations in plain English, no jargon."
    r"(?<=[,;]\s)no\s+[\w-]+(?:\s+[\w-]+)?[.!]?$)",
    re.IGNORECASE,
)
# A bound or duty said by a noun or a present-tense verb rather than a modal.
BINDS = re.compile(
    r"\b(?:requires?|requiring|mandates?|mandated|is\s+expected\s+to|are\s+expected\s+to|"
    r"ceiling|threshold|quota|allowance|hard\s+(?:limit|stop|cap|deadline|requirement)|"
    r"not\s+optional|non-optional|not\s+a\s+(?:cent|byte|minute|second|dollar)\s+more|"
    r"(?:is|are)\s+a\s+failure|counts?\s+as\s+(?:a\s+)?failure|no\s+later\s+than|sharp|"
    r"everywhere|across\s+the\s+board|without\s+exception|in\s+every\s+\w+|"
    r"(?:stays?|remains?)\s+(?:in|inside|out\s+of|off|local|private|internal)\b)",
    re.IGNORECASE,
)
# An imperative of work done as a habit: "Run the linter before each commit", "Make a
# backup before deleting anything".
HABIT = re.compile(
    r"\b(?:(?:before|after)\s+(?:each|every|any|all)\b|(?:before|after)\s+\w+ing\s+"
    r"(?:anything|any|each|every|all)\b|every\s+time|each\s+time|whenever|any\s+time)",
    re.IGNORECASE,
)
# A liking said of oneself or as a choice between two things.
PREFERS = re.compile(
    r"\b(?:partial\s+to|suits?\s+(?:me|us)|(?:works?|reads?|looks?)\s+(?:best|better|nicer)\s+"
    r"(?:for|to)\s+(?:me|us)|(?:is|are)\s+(?:better|nicer|best|preferable|easier|clearer)\s+"
    r"(?:for|to)\s+(?:me|us)|happiest|reach\s+for|(?:looks?|feels?|reads?)\s+(?:wrong|off|"
    r"bad|ugly|odd|better|nicer|cleaner)\s+to\s+(?:me|us)|not\s+a\s+(?:big\s+)?fan|"
    r"can['’]t\s+stand|go\s+(?:light|easy|heavy|sparingly)\s+on|leans?\s+on|"
    r"(?:are|is)\s+nicer|preferable|if\s+you\s+can\b|in\s+my\s+(?:view|opinion)|imo|imho|"
    r"makes?\s+me\s+(?:happy|glad)|beats?\s+\w+|would\s+be\s+(?:ideal|perfect|best|preferable)|"
    r"(?:more|less)\s+of\s+an?\s+\S+\s+(?:person|fan)|(?:aren['’]t|isn['’]t)\s+my\s+thing|"
    # A liking said as what the user is used to or what it does to them: "my go-to",
    # "are my thing", "what I'm used to", "keeps me sane", "annoy me", "I usually write …".
    r"my\s+go-?to|(?:is|are)\s+my\s+thing|what\s+i['’]m\s+used\s+to|keeps?\s+me\s+sane|"
    r"(?:annoys?|irritates?)\s+me\b|drives?\s+me\s+(?:nuts|crazy|mad)|"
    r"helps?\s+me\s+(?:read|follow|review|think)|"
    r"^i\s+(?:usually|normally|generally|typically)\s+(?!do\b|did\b)\w+)\b",
    re.IGNORECASE,
)
# "Tabs over spaces", "Bullet lists over prose, if you can": a choice said as a fragment.
CHOICE = re.compile(
    r"^(?!(?:\S+\s+){0,3}?(?:go|went|goes|hand|run|ran|roll|take|took|switch|move|fall|fell|"
    r"look|think|thought|pass|is|are|was|were|get|got|all|it|them|that|this)\s+over\b)"
    r"(?:[\w.()`'-]+\s+){1,3}over\s+(?!\d|\$|the\b|a\b|an\b|to\b|it\b|there\b|here\b|again\b|"
    r"https?\b|ssh\b|tcp\b|udp\b|time\b)[\w.(`'-]",
    re.IGNORECASE,
)
# A fragment with a courtesy or a contrast: "Terse answers, please.", "Metric units, not
# imperial." (no verb of work opens it: that would be a request).
COURTESY_FRAGMENT = re.compile(
    r"^[^,.;:?!]{3,60},\s*(?:please|thanks|thank\s+you|if\s+possible|ideally|not\s+[\w-]+"
    r"(?:\s+[\w-]+)?)\s*[.!]?$",
    re.IGNORECASE,
)
FOR_ME = re.compile(r"\bfor\s+(?:me|us)\s*[.!]?$", re.IGNORECASE)
_DONE_WORK = (
    r"(?:fixed|fixing|done|doing|rewritten|rewriting|sorted(?:\s+out)?|sorting|cleaned\s+up|"
    r"cleaning|updated|updating|removed|added|ported|porting|finished|built|implemented|"
    r"refactored|refactoring|migrated|tested|documented|deployed|merged|resolved|solved|"
    r"handled|investigated|looked\s+(?:at|into)|addressed|split|renamed|moved|converted|"
    r"rewired|replaced|optimi[sz]ed|sped\s+up|work)"
)
# Work asked as what a thing needs, a priority or a hope.
ASKS_WORK = re.compile(
    r"\b(?:needs?\s+" + _DONE_WORK + r"|(?:is|are)\s+(?:still\s+)?needed|"
    r"(?:want|need)s?\s+(?:it|this|that|them|the\s+[^,.;]{1,40}?|`[^`]+`|[\w.]+)\s+"
    + _DONE_WORK
    + r"\b|"
    r"(?:i|we)(?:['’]ll|\s+will)?\s+need\s+(?:a|an|some)\s|"
    # A thing asked for as what it needs or as a wish for it to exist: "`quartz_6` needs a
    # rewrite", "I'd appreciate a test suite for X", "Would be great to have a retry button".
    r"needs?\s+(?:a|an|some)\s+(?:\w+\s+)?(?:rewrite|fix|refactor|clean-?up|overhaul|"
    r"migration|port|redesign|update|upgrade)\b|(?:i['’]d|i\s+would|we['’]d)\s+appreciate\s+"
    r"(?:a|an|some)\s|would\s+be\s+(?:great|nice|good)\s+to\s+have\s+(?:a|an|some)\s|"
    # The agent named as the one to do it: "Time for you to document X", "I'm asking you to
    # merge …", "Hoping you can speed up …".
    r"\byou\s+(?:to|can|could)\s+(?:\w+\s+)?(?:document|profile|merge|speed\s+up|fix|add|"
    r"build|write|port|migrate|refactor|rewrite|implement|remove|clean\s+up|split|test|"
    r"investigate|debug|update|review)\b|"
    # "I want the parser to handle empty files": a behaviour to build ("I want answers to
    # be short" is a liking).
    r"(?:i|we)\s+(?:really\s+)?want\s+(?!you\b|to\b)[^,.;]{1,50}?\s+to\s+(?!be\b|stay\b|"
    r"remain\b|look\b|read\b|sound\b|feel\b|keep\b)\w+|(?:i['’]m|i\s+am|we['’]re|we\s+are)\s+hoping\s+"
    r"(?:you\s+)?(?:can|could|will|to)|^(?:would\s+you\s+)?mind\s+\w+ing|"
    r"^up\s+next|next\s+(?:milestone|up|thing|priority|item)\b|"
    r"priority(?:\s+(?:one|#?1|number\s+one))?\s+(?:is|:)|"
    r"(?:is|are)\s+(?:the|my|our|top)\s+(?:\w+\s+)?(?:priority|next\s+thing|main\s+thing|focus)|"
    r"would\s+be\s+the\s+next\s+(?:thing|step)|(?:is|are)\s+next\s*[.!]?$|comes?\s+(?:next|first)|"
    r"what\s+(?:i|we)['’]?(?:m|re|\s+am|\s+are)\s+after|is\s+what\s+(?:i|we)\s+(?:need|want)|"
    r"(?:i['’]d|i\s+would|we['’]d)\s+like\s+[^,.;]{1,40}?\s+\w+ed\s*[.!]?$|"
    r"[,;:—–]\s*(?:please\s+|so\s+)?(?:fix|speed|clean|sort|tidy|optimi[sz]e|refactor|rewrite|"
    r"update|improve|port)\s+(?:it|this|that|them)\b|could\s+use\s+(?:a|an|some|\w+)|"
    r"^we\s+should\s+(?:probably\s+|really\s+|now\s+)?(?:get|add|build|fix|implement|make|"
    r"write|port|move|set\s+up|create|migrate|refactor)\b|"
    r"^(?:can|could|will|would)\s+(?:the|this|our|it)\b.*\?$)",
    re.IGNORECASE,
)
# Verbs of work that lead an imperative, beside those of statements._WORK_VERBS.
MORE_WORK_VERBS = re.compile(
    r"^(?:please\s+|now\s+)?(?:focus|concentrate|tackle|address|sort\s+out|pick\s+up|"
    r"switch\s+focus|move\s+on\s+to|on\s+to)\b",
    re.IGNORECASE,
)


# The last reading, for a statement none of the forms above took: the words it uses. A
# sentence of a rule's form unseen before still uses a rule's words ("a hard freeze",
# "a firing offence", "Omar's blessing"), a liking a liking's ("a big fan", "read better"),
# and work a frame of work with a verb of it ("Today we're adding retries").
_RULE_WORDS = re.compile(
    r"\b(?:freeze|frozen|forbidden|offen[cs]e|blessing|approv(?:al|e|es|ed)|permission|"
    r"sign-?off|tops|mandatory|banned|exceptions?|untouched|strict(?:ly)?|policy|unless|"
    r"except|never|nobody|compliance|illegal|confidential|protected|restricted|sacred|"
    r"untouchable|sacrosanct)\b",
    re.IGNORECASE,
)
_WEAK_RULE_WORDS = re.compile(
    r"\b(?:every|each|any|all|only|without|limits?|max|min|caps?|hard|firm|"
    r"allowed|permitted|required|secrets?|private|sensitive|legal|security|rules?|"
    r"parameteri[sz]ed|saniti[sz]ed|escaped|encrypted|signed|reviewed)\b",
    re.IGNORECASE,
)
_LIKING_WORDS = re.compile(
    r"\b(?:fan|favou?rite|taste|picky|fussy|prefer\w*|better|best|nicer|cleaner|worse|"
    r"love|hate|enjoy|rather|ideally|please|style)\b",
    re.IGNORECASE,
)
# A verb of work used as one: opening the sentence, after "to", a modal or "we're", or as
# "-ing" ("Today we're adding retries", "The thing to build is …", "about adding …"); "the
# metrics port moved" names a port, it asks for no porting.
_WORK_STEMS = (
    r"(?:add|build|implement|fix|port|wire|migrate|create|write|refactor|ship|deliver|finish|"
    r"rewrite|speed\s+up|support|introduce|integrate|set\s+up)"
)
_WORK_WORDS = re.compile(
    r"(?:^|\b(?:to|will|can|could|should|must|please|let['’]s|and|we['’]re|we\s+are|i['’]m|"
    r"i\s+am|we['’]ll|i['’]ll)\s+)" + _WORK_STEMS + r"\b|"
    r"\b(?:add|build|implement|fix|port|wir|migrat|creat|writ|refactor|shipp|deliver|finish|"
    r"rewrit|support|introduc|integrat|sett)ing\b",
    re.IGNORECASE,
)
_WORK_FRAME = re.compile(
    r"\b(?:session|today|tonight|this\s+(?:week|sprint|morning|afternoon)|plan|target|goal|aim|"
    r"objective|milestone|remaining|left|still|to\s+do|to-do|todo|here\s+to|work|job|task|"
    r"piece|thing\s+to|lacks?|lacking|missing|wrapper)\b",
    re.IGNORECASE,
)
_WORK_ALONE = re.compile(
    r"\b(?:still\s+to\s+do|to-?do|remaining\s+(?:piece|part|bit|work|item)|lacks?|lacking)\b",
    re.IGNORECASE,
)


def act_by_words(text: str) -> str | None:
    """ "request", "preference" or "rule" by the words a statement uses, or None."""
    if (_WORK_WORDS.search(text) and _WORK_FRAME.search(text)) or _WORK_ALONE.search(text):
        return "request"
    if _LIKING_WORDS.search(text):
        return "preference"
    if _RULE_WORDS.search(text) or len(_WEAK_RULE_WORDS.findall(text)) >= 2:
        return "rule"
    return None
