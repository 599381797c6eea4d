"""The `compactor` command: serve, estimate, compact, openapi."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

app = typer.Typer(
    help="context-compactor: context management for LLM agents.", no_args_is_help=True
)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Run the HTTP service on its configured defaults."""
    import ipaddress

    import uvicorn

    from app.json_logging import json_log_config
    from app.serving import NoDelayH11Protocol
    from app.settings import Settings

    settings = Settings()
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback and not settings.api_key_spec() and not settings.allow_unauthenticated:
        typer.echo(
            f"refusing to serve on {host} without API keys: set COMPACTOR_API_KEYS "
            "(tenant:key,...) or COMPACTOR_API_KEYS_FILE, or set "
            "COMPACTOR_ALLOW_UNAUTHENTICATED=true to expose it anyway",
            err=True,
        )
        raise typer.Exit(2)
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


def _load_request(path: Path) -> dict[str, Any]:
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc}") from exc
    if isinstance(doc, list):
        doc = {"messages": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise typer.BadParameter(f"{path}: expected a request body with a messages array")
    return doc


@app.command()
def estimate(
    file: Annotated[Path, typer.Argument(help="A request body (JSON) with messages.")],
    model: Annotated[str | None, typer.Option(help="Model name for window and tokenizer.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the /estimate answer.")] = False,
) -> None:
    """Print a token breakdown of a history file."""
    from app.api.mappers.history import estimate_out, history_input
    from app.api.schemas.history import EstimateIn
    from app.composition import build_state
    from app.settings import Settings

    doc = _load_request(file)
    if model:
        doc["model"] = model
    body = EstimateIn.model_validate(doc)
    state = build_state(Settings())
    out = estimate_out(state.estimation.count(history_input(body)))
    if as_json:
        typer.echo(out.model_dump_json(indent=2))
        return
    rows = [
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
    for label, value in rows:
        typer.echo(f"{label:<{width}}  {value}")


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

    async def run() -> CompactionOutcome:
        # An HTTP summarizer needs its client open for the call.
        async with running_summarizer(settings) as summarizer:
            state = build_state(settings, summarizer=summarizer)
            return await state.compaction.compact(history_input(body), compact_options(body))

    try:
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


def main() -> None:
    app()


__all__ = ["app", "main"]


if __name__ == "__main__":
    main()
