"""Which operations and fields of the OpenAPI document a Python client does not cover.

Walks the document's REST operations (the /v1/* proxy routes are for the vendors' SDKs and
the HTML pages for browsers, so both are left out) and compares each with the client
method that sends it: every query, header and body field must be an argument of the
method or a key of its `**options` TypedDict, every answer field a field of the returned
dataclass, nested objects recursively, and every enum value a value of the Literal type
the client declares for it.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

Schema = dict[str, Any]

# The client method of each operation. A new operation in the document fails the check
# until the client has a method for it and it is listed here.
OPERATIONS: dict[tuple[str, str], str] = {
    ("GET", "/healthz"): "healthz",
    ("GET", "/readyz"): "readyz",
    ("GET", "/metrics"): "metrics",
    ("POST", "/estimate"): "estimate",
    ("POST", "/compact"): "compact",
    ("POST", "/context/system"): "assemble_system_prompt",
    ("POST", "/sessions"): "create_session",
    ("GET", "/sessions"): "list_sessions",
    ("GET", "/sessions/{session_id}"): "get_session",
    ("DELETE", "/sessions/{session_id}"): "delete_session",
    ("POST", "/sessions/{session_id}/messages"): "append_messages",
    ("GET", "/sessions/{session_id}/transcript"): "transcript",
    ("GET", "/sessions/{session_id}/context"): "context",
    ("POST", "/sessions/{session_id}/prepare"): "prepare",
    ("POST", "/sessions/{session_id}/compact"): "compact_session",
    ("GET", "/sessions/{session_id}/compactions"): "compactions",
    ("GET", "/sessions/{session_id}/jobs/{job_id}"): "compaction_job",
    ("GET", "/sessions/{session_id}/search"): "search",
    ("POST", "/sessions/{session_id}/compactions/{compaction_id}/revert"): "revert",
    ("POST", "/sessions/{session_id}/fork"): "fork",
    ("PATCH", "/sessions/{session_id}"): "update_session",
    ("GET", "/sessions/{session_id}/changes"): "settings_changes",
    ("GET", "/sessions/{session_id}/export"): "export_session",
    ("POST", "/sessions/import"): "import_session",
    ("GET", "/sessions/{session_id}/cost"): "cost",
    ("GET", "/cost"): "tenant_cost",
}

# Headers that turn an operation into another one, sent by a method of its own: the
# header's name → (the method, the status of the answer it reads). `Prefer:
# respond-async` makes a compaction a job (SPEC §16), answered 202.
SENT_BY_ANOTHER_METHOD: dict[tuple[str, str], dict[str, tuple[str, str]]] = {
    ("POST", "/sessions/{session_id}/compact"): {"prefer": ("start_compaction", "202")},
}

# Answers the client unwraps: the method returns this one list field of the JSON object.
UNWRAPPED = {"compactions": "compactions", "settings_changes": "changes"}

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def is_rest_operation(path: str, operation: Schema) -> bool:
    """False for the proxy routes and for pages that answer HTML only."""
    if path.startswith("/v1/") or path == "/v1" or path == "/ui" or path.startswith("/ui/"):
        return False
    # The vendor APIs' routes outside /v1 (Gemini's /{api_version}/models/...).
    if {"proxy", "native"} & set(operation.get("tags", [])):
        return False
    contents = {
        media for r in operation.get("responses", {}).values() for media in r.get("content", {})
    }
    return not contents or contents != {"text/html"}


def rest_operations(doc: Schema) -> Iterator[tuple[str, str, Schema]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS and is_rest_operation(path, operation):
                yield method.upper(), path, operation


class Checker:
    """Collects what a client (sync class, async class) misses of one OpenAPI document."""

    def __init__(self, doc: Schema, sync_client: type, async_client: type) -> None:
        self.doc = doc
        self.sync_client = sync_client
        self.async_client = async_client
        self.problems: list[str] = []

    def run(self) -> list[str]:
        for method, path, operation in rest_operations(self.doc):
            self.check_operation(method, path, operation)
        return self.problems

    # -- schemas ---------------------------------------------------------------------

    def resolve(self, schema: Schema) -> Schema:
        while "$ref" in schema:
            schema = self.doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        return schema

    def alternatives(self, schema: Schema) -> Iterator[Schema]:
        """The schema itself, its anyOf/oneOf branches and array items, resolved."""
        schema = self.resolve(schema)
        yield schema
        for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
            yield from self.alternatives(branch)
        if "items" in schema:
            yield from self.alternatives(schema["items"])

    def nested_objects(self, schema: Schema) -> list[Schema]:
        return [s for s in self.alternatives(schema) if s.get("properties")]

    def enum_values(self, schema: Schema) -> set[str]:
        return {str(v) for s in self.alternatives(schema) for v in s.get("enum", [])}

    # -- operations ------------------------------------------------------------------

    def check_operation(self, method: str, path: str, operation: Schema) -> None:
        where = f"{method} {path}"
        name = OPERATIONS.get((method, path))
        if name is None:
            self.problems.append(f"{where}: no client method (add one and list it)")
            return
        sync_method = getattr(self.sync_client, name, None)
        async_method = getattr(self.async_client, name, None)
        if sync_method is None or async_method is None:
            self.problems.append(f"{where}: {name}() missing on the sync or async client")
            return
        if not inspect.iscoroutinefunction(async_method):
            self.problems.append(f"{where}: the async {name}() is not a coroutine function")
        others = SENT_BY_ANOTHER_METHOD.get((method, path), {})
        for client_method in (sync_method, async_method):
            self.check_request(where, client_method, operation, set(others))
            self.check_answer(where, name, client_method, operation)
        for header, (other, status) in others.items():
            self.check_other_method(where, header, other, status, operation)

    def check_other_method(
        self, where: str, header: str, name: str, status: str, operation: Schema
    ) -> None:
        """The method sending `header` exists on both clients and reads that answer."""
        methods = [getattr(c, name, None) for c in (self.sync_client, self.async_client)]
        if None in methods:
            self.problems.append(f"{where}: {name}() (header {header!r}) missing on a client")
            return
        answer = operation["responses"].get(status)
        if answer is None:
            self.problems.append(f"{where}: no {status} answer for header {header!r}")
            return
        schema = self.resolve(answer["content"]["application/json"]["schema"])
        for client_method in methods:
            returned = typing.get_type_hints(client_method)["return"]
            self.check_fields(f"{where} {status} answer", schema, dataclass_fields(returned, where))

    def check_request(
        self,
        where: str,
        method: Callable[..., Any],
        operation: Schema,
        sent_elsewhere: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> None:
        hints = typing.get_type_hints(method, include_extras=True)
        arguments: dict[str, Any] = {}
        for parameter in inspect.signature(method).parameters.values():
            if parameter.name == "self":
                continue
            hint = hints.get(parameter.name, Any)
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                # **options: Unpack[SomeTypedDict]
                arguments.update(typing.get_type_hints(typing.get_args(hint)[0]))
            else:
                arguments[parameter.name] = hint
        for parameter in operation.get("parameters", []):
            key = parameter["name"].lower().replace("-", "_")
            if key not in arguments and key not in sent_elsewhere:
                self.problems.append(f"{where}: {parameter['in']} {parameter['name']!r} not sent")
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            self.check_fields(f"{where} request", self.resolve(body["schema"]), arguments)

    def check_answer(
        self, where: str, name: str, method: Callable[..., Any], operation: Schema
    ) -> None:
        answer = typing.get_type_hints(method)["return"]
        success = [r for code, r in operation["responses"].items() if code.startswith("2")]
        content = success[0].get("content", {}) if success else {}
        json_body = content.get("application/json")
        if json_body is None:
            binary = any(
                media.get("schema", {}).get("format") == "binary" for media in content.values()
            )
            expected: Any = (bytes if binary else str) if content else type(None)
            if answer is not expected:
                self.problems.append(f"{where}: answer should be {expected}, is {answer}")
            return
        schema = self.resolve(json_body["schema"])
        if name in UNWRAPPED:
            schema = self.resolve(schema["properties"][UNWRAPPED[name]]["items"])
            answer = typing.get_args(answer)[0]
        self.check_fields(f"{where} answer", schema, dataclass_fields(answer, where))

    def check_fields(self, where: str, schema: Schema, fields: dict[str, Any]) -> None:
        """Every property of `schema` must be a key of `fields` (name → type), recursively."""
        for prop, prop_schema in schema.get("properties", {}).items():
            if prop not in fields:
                self.problems.append(f"{where}: field {prop!r} not covered")
                continue
            hint = fields[prop]
            enum = self.enum_values(prop_schema)
            if enum:
                declared = literal_values(hint)
                if not enum <= declared:
                    missing = sorted(enum - declared)
                    self.problems.append(f"{where}: {prop!r} lacks enum values {missing}")
            for nested in self.nested_objects(prop_schema):
                structured = structured_types(hint)
                if not structured:
                    if nested.get("additionalProperties") is True:
                        continue  # free-form objects (messages, metadata) stay dicts
                    self.problems.append(f"{where}: {prop!r} is not typed as an object")
                    continue
                for inner in structured:
                    self.check_fields(f"{where}.{prop}", nested, type_fields(inner))


def leaves(hint: Any) -> Iterator[Any]:
    """The types inside unions, containers, Required/NotRequired and Annotated."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        yield hint
    elif origin in (typing.Union, types.UnionType) or (
        origin is not None and typing.get_args(hint)
    ):
        for arg in typing.get_args(hint):
            yield from leaves(arg)
    else:
        yield hint


def literal_values(hint: Any) -> set[str]:
    return {
        str(value)
        for leaf in leaves(hint)
        if typing.get_origin(leaf) is typing.Literal
        for value in typing.get_args(leaf)
    }


def structured_types(hint: Any) -> list[type]:
    return [
        leaf
        for leaf in leaves(hint)
        if isinstance(leaf, type) and (dataclasses.is_dataclass(leaf) or typing.is_typeddict(leaf))
    ]


def type_fields(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def dataclass_fields(cls: Any, where: str) -> dict[str, Any]:
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise AssertionError(f"{where}: the answer type {cls!r} is not a dataclass")
    return typing.get_type_hints(cls)
