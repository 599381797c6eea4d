"""Request bodies that refuse unknown fields with a did-you-mean (SPEC §7).

A misspelt setting (`keep_recent`, `trigger_token`, a flat `exclude_tools`) silently
ignored would compact with defaults the caller did not ask for, so it is a 422 that names
the field meant. The one exception is the provider request fields a caller forwards with
its history (`PROVIDER_REQUEST_FIELDS`): accepted and ignored.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, ClassVar

from pydantic import BaseModel, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import PydanticCustomError

# Fields of the OpenAI Chat Completions and Responses requests and of the Anthropic
# Messages request that callers send along with the history; none changes what this
# service counts or keeps. (`model`, `tools`, `system`, `messages` are fields of ours.)
PROVIDER_REQUEST_FIELDS = frozenset(
    {
        # OpenAI Chat Completions
        "audio",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "metadata",
        "modalities",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "tool_choice",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
        # OpenAI Responses
        "background",
        "include",
        "max_output_tokens",
        "max_tool_calls",
        "prompt",
        "reasoning",
        "text",
        "truncation",
        # Anthropic Messages (`cache_control` top-level: automatic prompt caching)
        "cache_control",
        "container",
        "context_management",
        "diagnostics",
        "mcp_servers",
        "stop_sequences",
        "thinking",
        "top_k",
    }
)


class StrictBody(BaseModel):
    """A request body whose unknown fields are refused with a suggestion."""

    # Accepted and ignored (the provider request fields on the history endpoints).
    ignored_fields: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="wrap")
    @classmethod
    def _refuse_unknown_fields(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        unknown = [
            key
            for key in data
            if isinstance(key, str)
            and key not in cls.model_fields
            and key not in cls.ignored_fields
        ]
        if not unknown:
            return handler(data)
        # The unknown fields are reported beside every other problem of the body, each at
        # its own location, with the field probably meant.
        line_errors: list[Any] = [
            {
                "type": PydanticCustomError("unknown_field", unknown_field_message(cls, key)),
                "loc": (key,),
                "input": data[key],
            }
            for key in unknown
        ]
        try:
            handler({k: v for k, v in data.items() if k not in unknown})
        except ValidationError as exc:
            line_errors.extend(as_line_errors(exc))
        raise ValidationError.from_exception_data(cls.__name__, line_errors)


def as_line_errors(exc: ValidationError) -> list[Any]:
    """The errors of `exc`, to be raised again beside others: same location, message and
    type name."""
    return [
        {
            "type": PydanticCustomError(error["type"], error["msg"]),
            "loc": error["loc"],
            "input": error["input"],
        }
        for error in exc.errors(include_url=False)
    ]


def unknown_field_message(model: type[BaseModel], name: str) -> str:
    """`unknown field 'x'`, with the field most likely meant when there is one."""
    known = list(model.model_fields)
    accepted = [*known, *sorted(getattr(model, "ignored_fields", ()))]
    close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
    if close:
        return f"unknown field {name!r}; did you mean {close[0]!r}?"
    nested = _nested_fields(model)
    if name in nested:
        return f"unknown field {name!r}; did you mean {nested[name]!r}?"
    close = difflib.get_close_matches(name, list(nested), n=1, cutoff=0.75)
    if close:
        return f"unknown field {name!r}; did you mean {nested[close[0]]!r}?"
    return f"unknown field {name!r} (known fields: {', '.join(known)})"


def _nested_fields(model: type[BaseModel]) -> dict[str, str]:
    """Fields of the object-valued fields: `exclude_tools` → `clear.exclude_tools`."""
    nested: dict[str, str] = {}
    for name, info in model.model_fields.items():
        for inner in _models_in(info.annotation):
            for sub in inner.model_fields:
                nested.setdefault(sub, f"{name}.{sub}")
    return nested


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []
