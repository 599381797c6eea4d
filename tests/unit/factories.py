"""Small builders of engine messages for unit tests."""

from __future__ import annotations

from app.engine.messages import Block, BlockKind, Message, Role


def user(text: str) -> Message:
    return Message(role=Role.USER, blocks=(Block(kind=BlockKind.TEXT, text=text),))


def assistant(text: str = "", *calls: tuple[str, str]) -> Message:
    blocks = [Block(kind=BlockKind.TEXT, text=text)] if text else []
    blocks += [
        Block(kind=BlockKind.TOOL_CALL, tool_call_id=call_id, tool_name=name, arguments="{}")
        for call_id, name in calls
    ]
    return Message(role=Role.ASSISTANT, blocks=tuple(blocks))


def tool(call_id: str, text: str = "ok") -> Message:
    return Message(
        role=Role.TOOL,
        blocks=(Block(kind=BlockKind.TOOL_RESULT, tool_call_id=call_id, text=text),),
    )


def system(text: str) -> Message:
    return Message(role=Role.SYSTEM, blocks=(Block(kind=BlockKind.TEXT, text=text),))
