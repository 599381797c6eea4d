"""Prompts for the summary call: first summary, update of a previous one, and the system
instruction. Written for this service; the section list is the contract (SPEC §5.4)."""

from __future__ import annotations

SUMMARY_SECTIONS: tuple[str, ...] = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)

SUMMARIZER_SYSTEM_PROMPT = (
    "You write context summaries for a coding agent whose conversation history is being "
    "compacted. You are not the agent: do not continue its task, do not answer questions in "
    "the conversation, do not call tools. Output only the summary, in the requested format, "
    "and nothing before or after it."
)

_FORMAT = """Write the summary in exactly this structure, with these headings in this order:

## Goal
What the user wants to achieve (one or more items).

## Constraints & Preferences
- Every requirement, rule or preference the user stated, quoted as precisely as possible
- Or "(none)" when the user stated none

## Progress
### Done
- [x] Finished work and changes, with file paths
### In Progress
- [ ] Work started but not finished
### Blocked
- Problems that stop progress, or "(none)"

## Key Decisions
- **Decision**: why it was taken

## Next Steps
1. What should happen next, in order

## Critical Context
- Data, code references, command lines and facts needed to continue
- Or "(none)"

Be concise, but keep exact file paths, function and class names, commands and error
messages verbatim: the agent will rely on them."""

FIRST_SUMMARY_PROMPT = (
    "The conversation below, inside <conversation> tags, is the older part of an agent "
    "session; it will be replaced by your summary, and the newest messages stay as they are. "
    "Summarize it so the agent can continue the work without it.\n\n" + _FORMAT
)

UPDATE_SUMMARY_PROMPT = (
    "The text inside <previous-summary> tags summarizes an even older part of this agent "
    "session. The conversation inside <conversation> tags happened after it and is now being "
    "compacted as well. Produce one updated summary that replaces both:\n"
    "- keep all information from the previous summary unless it is clearly obsolete;\n"
    "- add the new progress, decisions and context from the conversation;\n"
    "- move items that are now finished from In Progress to Done;\n"
    "- rewrite Next Steps to match the current state;\n"
    "- drop what is no longer relevant to the task.\n\n" + _FORMAT
)


def build_summary_prompt(
    conversation: str, previous_summary: str | None, instructions: str | None
) -> str:
    """The user-turn text of a summary call: first or update prompt, plus caller focus."""
    parts: list[str] = []
    if previous_summary is not None:
        parts.append(f"<previous-summary>\n{previous_summary.strip()}\n</previous-summary>")
    parts.append(f"<conversation>\n{conversation}\n</conversation>")
    parts.append(UPDATE_SUMMARY_PROMPT if previous_summary is not None else FIRST_SUMMARY_PROMPT)
    if instructions and instructions.strip():
        parts.append(f"Additional focus requested by the user:\n{instructions.strip()}")
    return "\n\n".join(parts)
