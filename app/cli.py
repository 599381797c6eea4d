"""The `compactor` command: serve, keygen, estimate, compact, config, migrate, openapi,
export and import."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import orjson
import typer

app = typer.Typer(
    help="context-compactor: context management for LLM agents.", no_args_is_help=True
)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[
        int, typer.Option(min=1, help="Worker processes (metrics are summed over all).")
    ] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Run the HTTP service on its configured defaults."""
    import ipaddress

    import uvicorn

    from app.api.auth import check_metrics_key, parse_api_keys
    from app.json_logging import json_log_config
    from app.registry import load_registry
    from app.serving import NoDelayH11Protocol
    from app.settings import Settings
    from app.store.database import normalize_url
    from app.store.migrate import upgrade

    settings = Settings()
    # Configuration errors stop here, as one line, before any worker starts.
    keys = parse_api_keys(settings.api_key_spec())
    check_metrics_key(settings.metrics_key_value(), keys)
    normalize_url(settings.database_url)
    load_registry(settings.models_file, settings.fallback_context_window)
    if settings.migrate_on_start:
        # Here a failure is one line; the workers' own start-up then finds nothing to do.
        upgrade(settings.database_url)
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback and not keys and not settings.allow_unauthenticated:
        typer.echo(
            f"refusing to serve on {host} without API keys: set COMPACTOR_API_KEYS "
            "(tenant:key,...) or COMPACTOR_API_KEYS_FILE, or set "
            "COMPACTOR_ALLOW_UNAUTHENTICATED=true to expose it anyway",
            err=True,
        )
        raise typer.Exit(2)
    if settings.state_key_bytes() is None:  # unset, or set but empty
        share_state_key(workers, log_level)
    metrics_dir = None
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Workers share their metrics through files in a fresh folder (removed at exit).
        metrics_dir = tempfile.mkdtemp(prefix="compactor-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        uvicorn.run(
            "app.main:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            log_config=json_log_config(log_level),
            access_log=False,
            http=NoDelayH11Protocol,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


STATE_KEY_VARIABLE = "COMPACTOR_STATE_KEY"
KEYGEN_HINT = (
    "make one with `compactor keygen` "
    "(or python -c 'import secrets; print(secrets.token_urlsafe(32))')"
)


def share_state_key(workers: int, log_level: str = "info") -> None:
    """Gives the workers of this serve one state key made now (SPEC §9): they inherit it
    through the environment, so a compaction item or inspector login one worker wrote is
    accepted by the others. The key itself is never printed."""
    import logging
    import logging.config
    import secrets

    from app.json_logging import json_log_config

    os.environ[STATE_KEY_VARIABLE] = secrets.token_urlsafe(32)
    # The workers see a configured key, so the warning is said here, once.
    logging.config.dictConfig(json_log_config(log_level))
    who = f"the {workers} workers of this serve share" if workers > 1 else "this serve uses"
    logging.getLogger("compactor.startup").warning(
        f"{STATE_KEY_VARIABLE} is not set: {who} a key made at start, so compaction items "
        "and inspector logins stop working after a restart and on other replicas; "
        f"{KEYGEN_HINT} and set it, the same on every replica"
    )


@app.command()
def keygen() -> None:
    """Print a new random key for COMPACTOR_STATE_KEY (or an API key)."""
    import secrets

    typer.echo(secrets.token_urlsafe(32))


def _load_request(path: Path) -> dict[str, Any]:
    """The request body in `path`; a file that is missing or not one is one line, exit 2."""
    try:
        doc = orjson.loads(path.read_bytes())
    except OSError as exc:
        _fail(f"cannot read {path}: {exc.strerror or type(exc).__name__}")
    except orjson.JSONDecodeError as exc:
        _fail(f"{path} is not JSON: {exc}")
    if isinstance(doc, list):
        doc = {"messages": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        _fail(f"{path}: expected a request body with a messages array")
    return doc


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@app.command()
def estimate(
    file: Annotated[Path, typer.Argument(help="A request body (JSON) with messages.")],
    model: Annotated[str | None, typer.Option(help="Model name for window and tokenizer.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the /estimate answer.")] = False,
    table: Annotated[bool, typer.Option(help="Print the per-message table.")] = True,
) -> None:
    """Print a token breakdown of a history file, message by message."""
    from app.api.mappers.history import estimate_out, history_input
    from app.api.schemas.history import EstimateIn
    from app.composition import build_state
    from app.settings import Settings

    doc = _load_request(file)
    if model:
        doc["model"] = model
    body = EstimateIn.model_validate(doc)
    state = build_state(Settings())
    counted = state.estimation.count(history_input(body))
    out = estimate_out(counted)
    if as_json:
        typer.echo(out.model_dump_json(indent=2))
        return
    detected = "given" if body.format else "detected"
    rows = [
        ("format", f"{counted.format} ({detected})"),
        ("model", out.model or "(unknown)"),
        ("encoding", f"{out.encoding} ({'exact' if out.exact else 'approximate'})"),
        ("system", f"{out.breakdown.system:>10,}"),
        ("tools", f"{out.breakdown.tools:>10,}"),
        ("messages", f"{out.breakdown.messages:>10,}  ({len(out.per_message)} messages)"),
        ("total", f"{out.tokens:>10,}"),
        ("context window", f"{out.context_window:>10,}"),
        ("threshold", f"{out.threshold:>10,}"),
        ("should compact", "yes" if out.should_compact else "no"),
    ]
    width = max(len(label) for label, _ in rows)
    if table:
        typer.echo(f"{'#':>5}  {'role':<10} {'tokens':>9}  content")
        for index, (message, tokens) in enumerate(zip(body.messages, out.per_message, strict=True)):
            role = str(message.get("role") or message.get("type") or "?")[:10]
            typer.echo(f"{index:>5}  {role:<10} {tokens:>9,}  {_preview(message)}")
        typer.echo("")
    for label, value in rows:
        typer.echo(f"{label:<{width}}  {value}")


def _preview(message: dict[str, Any], width: int = 60) -> str:
    """The start of a message's first text (or what it carries instead), on one line."""
    content = message.get("content", message.get("output", message.get("arguments")))
    if isinstance(content, list):
        texts = [
            b.get("text") or b.get("thinking")
            for b in content
            if isinstance(b, dict) and (b.get("text") or b.get("thinking"))
        ]
        kinds = [str(b.get("type")) for b in content if isinstance(b, dict)]
        content = texts[0] if texts else "[" + ", ".join(kinds) + "]"
    if not content and message.get("tool_calls"):
        names = [str((c.get("function") or {}).get("name")) for c in message["tool_calls"]]
        content = "tool calls: " + ", ".join(names)
    text = " ".join(str(content or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


@app.command()
def compact(
    file: Annotated[Path, typer.Argument(help="A request body (JSON) with messages.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write here.")] = None,
    force: Annotated[bool, typer.Option(help="Compact even under the threshold.")] = False,
    keep_recent_tokens: Annotated[int | None, typer.Option(help="Tokens kept verbatim.")] = None,
    instructions: Annotated[str | None, typer.Option(help="Focus for the summary.")] = None,
) -> None:
    """Compact a history file with the configured summarizer; print or write the answer."""
    from app.api.mappers.history import compact_options, compact_out, history_input
    from app.api.schemas.history import CompactIn
    from app.cli_progress import ChunkProgressDisplay
    from app.composition import SummarizerConfigError, build_state, running_summarizer
    from app.engine.errors import CompactorError
    from app.services.compaction import CompactionOutcome
    from app.settings import Settings

    doc = _load_request(file)
    doc.update({"force": force or doc.get("force", False)})
    if keep_recent_tokens is not None:
        doc["keep_recent_tokens"] = keep_recent_tokens
    if instructions is not None:
        doc["instructions"] = instructions
    body = CompactIn.model_validate(doc)
    settings = Settings()
    # A model summary takes a while (chunk by chunk for a long history): show how far it
    # is. The extractive one answers at once, in one chunk.
    display = ChunkProgressDisplay() if settings.summarizer != "extractive" else None

    async def run() -> CompactionOutcome:
        # An HTTP summarizer needs its client open for the call.
        async with running_summarizer(settings) as summarizer:
            state = build_state(settings, summarizer=summarizer)
            options = compact_options(body)
            if display is not None:
                options = replace(options, progress=display.update)
            return await state.compaction.compact(history_input(body), options)

    try:
        with display or contextlib.nullcontext():
            outcome = asyncio.run(run())
    except SummarizerConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    except CompactorError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    text = compact_out(body, outcome).model_dump_json(indent=2)
    if output is None:
        typer.echo(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        typer.echo(
            f"{'compacted' if outcome.compacted else 'not compacted'}: "
            f"{outcome.tokens_before} → {outcome.tokens_after or outcome.tokens_before} tokens; "
            f"wrote {output}",
            err=True,
        )


@app.command()
def config(
    markdown: Annotated[
        bool,
        typer.Option(
            "--markdown", help="Print the table of every setting (docs/configuration.md)."
        ),
    ] = False,
    example: Annotated[
        bool,
        typer.Option("--example", help="Print a configuration file with every key, commented."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Print the effective configuration and where each value came from (secrets masked)."""
    from app.configuration import environment
    from app.configuration_report import (
        effective_configuration,
        example_toml,
        markdown_table,
        render_configuration,
    )
    from app.settings import Settings

    if markdown or example:
        sys.stdout.write(markdown_table() if markdown else example_toml())
        return
    settings = Settings()
    path, rows = effective_configuration(settings, environment())
    if as_json:
        doc = {
            "file": str(path) if path else None,
            "settings": [
                {"variable": r.variable, "value": r.value, "source": r.source} for r in rows
            ],
        }
        typer.echo(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
        return
    typer.echo(render_configuration(path, rows, settings))


@app.command()
def migrate(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head",
) -> None:
    """Apply pending database migrations (COMPACTOR_DATABASE_URL)."""
    from app.settings import Settings
    from app.store.migrate import upgrade

    url = Settings().database_url
    upgrade(url, revision)
    typer.echo(f"database at {revision}: {url.split('@')[-1]}")


@app.command()
def openapi(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write here.")] = None,
) -> None:
    """Print (or write) the OpenAPI document of the running app."""
    from app.openapi_doc import openapi_json

    text = openapi_json()
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


def _session_service(settings: Any) -> Any:
    """The session service over COMPACTOR_DATABASE_URL (migrated first when the server
    would migrate it on start), and the function that closes its store."""
    from app.composition import build_state
    from app.store.migrate import upgrade

    if settings.migrate_on_start:
        upgrade(settings.database_url)
    state = build_state(settings)
    return state.sessions, state.close_store


@app.command("export")
def export_session(
    session: Annotated[str, typer.Argument(help="The session id.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The bundle file to write.")],
    tenant: Annotated[str, typer.Option(help="The session's tenant.")] = "default",
) -> None:
    """Write a session of COMPACTOR_DATABASE_URL as a JSON Lines bundle (streamed)."""
    from app.engine.errors import CompactorError
    from app.settings import Settings

    sessions, close = _session_service(Settings())
    partial = output.with_name(output.name + ".partial")
    try:
        lines = 0
        with partial.open("wb") as out:
            for line in sessions.export(tenant, session):
                out.write(line)
                lines += 1
        partial.replace(output)
    except CompactorError as exc:
        partial.unlink(missing_ok=True)
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    finally:
        close()
    typer.echo(f"exported session {session}: {lines} lines to {output}", err=True)


@app.command("import")
def import_session(
    file: Annotated[Path, typer.Argument(help="A bundle written by `compactor export`.")],
    tenant: Annotated[str, typer.Option(help="The tenant that owns the new session.")] = "default",
) -> None:
    """Restore a bundle into COMPACTOR_DATABASE_URL as a new session; print its id. A
    malformed or truncated bundle writes nothing (exit 1)."""
    from app.engine.errors import CompactorError
    from app.settings import Settings

    try:
        source = file.open("rb")
    except OSError as exc:
        _fail(f"cannot read {file}: {exc.strerror or type(exc).__name__}")
    sessions, close = _session_service(Settings())
    try:
        with source:
            view = sessions.import_bundle(tenant, source)
    except CompactorError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    finally:
        close()
    typer.echo(view.id)
    typer.echo(
        f"imported {view.entry_count} entries, {view.compaction_count} compactions", err=True
    )


def main() -> None:
    """The console entry point: an operator's mistake is one line on stderr and exit 2."""
    try:
        app()
    except Exception as exc:
        if os.environ.get("COMPACTOR_TRACEBACK"):
            raise
        from app.cli_errors import describe

        typer.echo(f"error: {describe(exc)}", err=True)
        sys.exit(2)


__all__ = ["app", "main"]


if __name__ == "__main__":
    main()
