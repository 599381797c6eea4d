"""What a summary keeps: canary sessions and probes on real transcripts (SPEC §14).

Part 1, canaries (bench/fidelity_canaries.py): sessions in three shapes (Chat Completions
tool calls, Anthropic tool_use blocks, a text-action agent whose tool output arrives as
`user`), with safety rules, constraints, facts, goals and preferences stated once in many
phrasings and buried in long tool output and filler; some are updated later. Each session
runs 5 rounds of forced compaction through the service (`CompactionService.compact`, what
`/compact` runs), keeping the newest 10%, 30% or 50% of the tokens. After every round the
summary alone is scored: a canary counts once it has been folded, and is kept when one item
of its section holds all of its checks (an updated one: its new value, and no line that
still states it as planted without marking it replaced — that line counts as stale; the
stale column says in brackets how many of those are only the update's own words, a line
holding the new value too, such as the user's "3912, not 8135" quoted as the current
request). Every set is reported apart; HELD_OUT_3_FINAL, HELD_OUT_4_FINAL and HELD_OUT_5
are the ones whose failures were never read (bench/fidelity_canaries.py says which sets are
development material).

Part 2, probes (bench/fidelity_probes.py, written before any summary was read) on every
transcript in tests/data (falling back to ../shared/transcripts), one forced compaction
keeping the newest 30% (and 10%, 50%): goal, first error, modified files, last instruction,
constraints, next step, noise; tokens before and after per transcript.

Every table has three rows: the extractive summarizer; a forgetful model followed by the
service's restoration step; and LangChain's trim_messages over the folded messages at the
extractive summary's token count (the floor: what the same budget holds without a summary).

Part 3 times the extractive summarizer on the biggest transcript, against serializing the
same messages for a model summarizer (the in-process baseline); part 4 prints the summary's
tokens over 10 rounds; part 5 what tool-result clearing alone saves on the Claude Code
transcripts.

Run: .venv/bin/python bench/fidelity.py [--quick] [--sets dev,held-out-2] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.compaction.marker import SummaryMarker  # noqa: E402
from app.engine.compaction.serialize import serialize_for_summary  # noqa: E402
from app.engine.extractive import summarizer as summarizer_module  # noqa: E402
from app.engine.extractive.summarizer import extractive_summary  # noqa: E402
from app.engine.messages import Role  # noqa: E402
from app.formats.registry import FORMATS  # noqa: E402
from app.main import build_state  # noqa: E402
from app.services.compaction import CompactionService  # noqa: E402
from app.services.history import CompactOptions, HistoryInput  # noqa: E402
from app.settings import Settings  # noqa: E402
from bench.fidelity_canaries import (  # noqa: E402
    KINDS,
    SETS,
    Session,
    build_session,
)
from bench.fidelity_probes import (  # noqa: E402
    PROBES,
    Item,
    filler_items,
    genuine_next_step,
    holds,
    holds_in,
    noise_items,
    normalized,
    section_items,
)
from bench.fidelity_systems import ForgetfulModel, folded_texts, trim_floor  # noqa: E402
from tests.real_transcripts import RealTranscript, load_all  # noqa: E402

SHAPES = ("openai", "anthropic", "text_action")
KEEP_FRACTIONS = (0.1, 0.3, 0.5)
SYSTEMS = ("extractive", "forgetful+restore", "trim floor")
_SECTION_OF = {"safety rule": "constraint", "constraint": "constraint", "preference": "constraint"}
_SECTION_OF |= {"goal": "goal", "fact": ""}
_REPLACED = (
    "replaced",
    "replaces",
    "superseded",
    "no longer",
    "instead of",
    "was ",
    "previously",
    "earlier",
    "formerly",
    "outdated",
    "~~",
)


@dataclass
class Tally:
    kept: int = 0
    total: int = 0

    def add(self, ok: bool) -> None:
        self.kept += ok
        self.total += 1

    def share(self) -> str:
        return f"{self.kept / self.total:.0%}" if self.total else "–"


@dataclass
class RoundScore:
    by_kind: dict[str, Tally] = field(default_factory=lambda: {k: Tally() for k in KINDS})
    stale: int = 0
    # Of those, the ones where every stale line also holds the new value: the user's own
    # update ("3912, not 8135") quoted or kept, which sets the old value aside.
    stale_in_update: int = 0
    noise: int = 0
    filler_steps: int = 0
    summary_tokens: list[int] = field(default_factory=list)


def _items(text: str, section: str) -> list[str]:
    if not section:
        return [normalized(line) for line in text.splitlines() if line.strip()]
    return [normalized(i) for i in section_items(text, section)]


def _score_round(
    score: RoundScore, text: str, session: Session, folded_upto: int, is_summary: bool
) -> None:
    everything = [normalized(line) for line in text.splitlines() if line.strip()]
    for planting in session.plantings:
        if planting.at >= folded_upto:
            continue
        canary = planting.canary
        section = _SECTION_OF[canary.kind] if is_summary else ""
        items = _items(text, section) if is_summary else everything
        updated = planting.update_at is not None and planting.update_at < folded_upto
        checks = canary.update.checks if updated and canary.update else canary.checks
        kept = any(all(c in item for c in checks) for item in items)
        if updated and canary.update:
            # Stale: a line still states the canary as planted (all of its checks, the old
            # value among them) without marking it replaced.
            stale_lines = [
                line
                for line in everything
                if all(c in line for c in canary.checks) and not any(m in line for m in _REPLACED)
            ]
            stale = bool(stale_lines)
            score.stale += stale
            score.stale_in_update += stale and all(
                all(c in line for c in canary.update.checks) for line in stale_lines
            )
            kept = kept and not stale
        score.by_kind[canary.kind].add(kept)
    if is_summary:
        guarded = " ".join(_items(text, "goal") + _items(text, "constraint"))
        score.noise += sum(token.casefold() in guarded for token in session.noise)
        steps = section_items(text, "next step")
        score.filler_steps += sum(
            1
            for s in steps
            if normalized(s).split(" ", 1)[-1].startswith(("let me", "acknowledged"))
        )


async def _context_tokens(service: CompactionService, messages: list[Any], fmt: str) -> int:
    counted = await asyncio.to_thread(
        service.estimation.count, HistoryInput(messages=messages, format=fmt), parse_all=True
    )
    return counted.estimate.tokens


def _summary_of(messages: Sequence[Any], fmt: str) -> str:
    first = messages[0]
    content = first["content"]
    if not isinstance(content, str):
        content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return SummaryMarker.parse(content) or ""


async def run_session(
    service: CompactionService, session: Session, keep: float
) -> list[tuple[str, int, int]]:
    """(summary, first unfolded message index, summary tokens) after each round."""
    fmt = "anthropic" if session.shape == "anthropic" else "openai"
    context: list[Any] = []
    origin: list[int | None] = []
    results = []
    previous_len = 0
    tokenizer = service.estimation.tokenizers.get("o200k_base")
    for messages in session.rounds:
        new = messages[previous_len:]
        context = [*context, *new]
        origin = [*origin, *range(previous_len, len(messages))]
        previous_len = len(messages)
        tokens = await _context_tokens(service, context, fmt)
        history = HistoryInput(
            messages=context, format=fmt, keep_recent_tokens=max(1, int(tokens * keep))
        )
        outcome = await service.compact(history, CompactOptions(force=True))
        assert outcome.compacted and outcome.messages is not None, outcome.reason
        kept = len(outcome.messages) - 1
        origin = [None, *origin[len(origin) - kept :]]
        context = outcome.messages
        summary = _summary_of(context, fmt)
        first_kept = next((o for o in origin[1:] if o is not None), previous_len)
        results.append((summary, first_kept, tokenizer.count(summary)))
    return results


async def canary_part(
    extractive: CompactionService,
    forgetful: CompactionService,
    seeds: Sequence[int],
    canary_set: str,
) -> dict[str, dict[int, RoundScore]]:
    scores: dict[str, dict[int, RoundScore]] = {s: defaultdict(RoundScore) for s in SYSTEMS}
    by_keep: dict[tuple[str, float], RoundScore] = defaultdict(RoundScore)
    tokenizer = extractive.estimation.tokenizers.get("o200k_base")
    for seed in seeds:
        for shape in SHAPES:
            session = build_session(seed, canary_set, shape)
            fmt = "anthropic" if shape == "anthropic" else "openai"
            for keep in KEEP_FRACTIONS:
                ours = await run_session(extractive, session, keep)
                theirs = await run_session(forgetful, session, keep)
                for number, ((summary, upto, tokens), (model_summary, model_upto, _)) in enumerate(
                    zip(ours, theirs, strict=True), 1
                ):
                    round_score = scores["extractive"][number]
                    _score_round(round_score, summary, session, upto, True)
                    round_score.summary_tokens.append(tokens)
                    _score_round(
                        scores["forgetful+restore"][number],
                        model_summary,
                        session,
                        model_upto,
                        True,
                    )
                    folded = folded_texts(session.rounds[number - 1][:upto], fmt)
                    floor = trim_floor(folded, tokens, tokenizer)
                    _score_round(scores["trim floor"][number], floor, session, upto, False)
                    if number == 5:
                        for system, text, at in (
                            ("extractive", summary, upto),
                            ("forgetful+restore", model_summary, model_upto),
                        ):
                            _score_round(by_keep[(system, keep)], text, session, at, True)
                        _score_round(by_keep[("trim floor", keep)], floor, session, upto, False)
    scores["_by_keep"] = by_keep  # type: ignore[assignment]
    return scores


def print_canaries(title: str, scores: dict[str, Any], out: dict[str, Any]) -> None:
    print(f"\n### Canaries, {title}: share kept in the summary alone, per round\n")
    print(
        "| summarizer | round | "
        + " | ".join(KINDS)
        + " | stale shown as current (of which only in the update's own words)"
        + " | noise in Goal/Constraints | summary tokens (median, max) |"
    )
    print("|---|---|" + "---|" * (len(KINDS) + 3))
    table: dict[str, Any] = {}
    for system in SYSTEMS:
        for number in sorted(scores[system]):
            s = scores[system][number]
            cells = " | ".join(s.by_kind[k].share() for k in KINDS)
            tokens = (
                f"{statistics.median(s.summary_tokens):,.0f}, {max(s.summary_tokens):,}"
                if s.summary_tokens
                else "–"
            )
            stale = f"{s.stale} ({s.stale_in_update})"
            extra = f"{stale} | {s.noise if system != 'trim floor' else '–'} | {tokens}"
            print(f"| {system} | {number} | {cells} | {extra} |")
            table[f"{system}/{number}"] = {
                **{k: [s.by_kind[k].kept, s.by_kind[k].total] for k in KINDS},
                "stale": s.stale,
                "stale_in_update": s.stale_in_update,
                "noise": s.noise,
                "tokens": s.summary_tokens,
            }
    print("\nround 5 by keep budget (newest share of tokens kept verbatim)\n")
    print(
        "| summarizer | keep | "
        + " | ".join(KINDS)
        + " | stale | of which only in the update's own words |"
    )
    print("|---|---|" + "---|" * (len(KINDS) + 2))
    for (system, keep), s in sorted(
        scores["_by_keep"].items(), key=lambda kv: (SYSTEMS.index(kv[0][0]), kv[0][1])
    ):
        cells = " | ".join(s.by_kind[k].share() for k in KINDS)
        print(f"| {system} | {keep:.0%} | {cells} | {s.stale} | {s.stale_in_update} |")
    out[title] = table


# --- real transcripts ----------------------------------------------------------------------


@dataclass
class ProbeScore:
    goal: Tally = field(default_factory=Tally)
    first_error: Tally = field(default_factory=Tally)
    modified_all: Tally = field(default_factory=Tally)
    modified_each: Tally = field(default_factory=Tally)
    last_instruction: Tally = field(default_factory=Tally)
    constraints_all: Tally = field(default_factory=Tally)
    constraints_each: Tally = field(default_factory=Tally)
    next_step: Tally = field(default_factory=Tally)
    noise: int = 0
    filler: int = 0
    noise_examples: list[str] = field(default_factory=list)


_PROBE_COLUMNS = (
    ("goal", "goal"),
    ("first_error", "first error"),
    ("modified_all", "all modified files"),
    ("modified_each", "modified files (each)"),
    ("last_instruction", "last instruction"),
    ("constraints_all", "all constraints"),
    ("constraints_each", "constraints (each)"),
    ("next_step", "genuine next step"),
)


def _user_texts(transcript: RealTranscript, upto: int) -> list[str]:
    probes = PROBES[transcript.name]
    texts = []
    for at, marker in probes.user_words:
        if at >= upto:
            continue
        content = transcript.messages[at]["content"]
        if not isinstance(content, str):
            content = "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
        texts.append(content.split(marker, 1)[-1] if marker else content)
    return texts


def score_probes(
    score: ProbeScore, transcript: RealTranscript, summary: str, upto: int, is_summary: bool
) -> dict[str, Any]:
    probes = PROBES[transcript.name]
    row: dict[str, Any] = {}

    def folded(items: Sequence[Item]) -> list[Item]:
        return [i for i in items if i.at < upto]

    # On a summary, the goal must be in the Goal and a constraint in Constraints; the
    # floor is plain text, where anywhere counts.
    def held(item: Item, section: str) -> bool:
        return holds_in(summary, item, section) if is_summary else holds(summary, item)

    score.goal.add(ok := held(probes.goal, "goal"))
    row["goal"] = ok
    if probes.first_error and probes.first_error.at < upto:
        score.first_error.add(ok := holds(summary, probes.first_error))
        row["first_error"] = ok
    modified = folded(probes.modified)
    if modified:
        kept = [holds(summary, i) for i in modified]
        for k in kept:
            score.modified_each.add(k)
        score.modified_all.add(all(kept))
        row["modified"] = f"{sum(kept)}/{len(kept)}"
    instructions = folded(probes.instructions)
    if instructions:
        score.last_instruction.add(ok := holds(summary, instructions[-1]))
        row["last_instruction"] = ok
    constraints = folded(probes.constraints)
    if constraints:
        kept = [held(i, "constraint") for i in constraints]
        for k in kept:
            score.constraints_each.add(k)
        score.constraints_all.add(all(kept))
        row["constraints"] = f"{sum(kept)}/{len(kept)}"
    fmt = transcript.format
    texts = folded_texts(transcript.messages[:upto], fmt)
    # Assistant texts: messages that say something, not those made of tool calls only.
    assistant = [t for role, t in texts if role is Role.ASSISTANT and "[Assistant]: " in t][-5:]
    grounds = [*(_user_texts(transcript, upto)[-1:]), *assistant]
    if probes.first_error and probes.first_error.at < upto:
        grounds.extend(probes.first_error.phrases)
    if is_summary:
        score.next_step.add(ok := genuine_next_step(summary, grounds))
        row["next_step"] = ok
        user_words = set()
        for at, _marker in probes.user_words:
            user_words.add(at)
        others = [(r, t) for index, (r, t) in enumerate(texts) if index not in user_words]
        said = [t for r, t in others if r is Role.ASSISTANT]
        tool_output = [t for r, t in others if r is not Role.ASSISTANT]
        noise = noise_items(summary, _user_texts(transcript, upto), said, tool_output)
        filler = filler_items(summary)
        score.noise += len(noise)
        score.filler += len(filler)
        score.noise_examples.extend(f"{transcript.name}: {n[:120]}" for n in [*noise, *filler])
        row["noise"] = len(noise)
        row["filler"] = len(filler)
    return row


async def transcript_part(
    extractive: CompactionService, forgetful: CompactionService, keep: float, out: dict[str, Any]
) -> dict[str, ProbeScore]:
    tokenizer = extractive.estimation.tokenizers.get("o200k_base")
    scores = {s: ProbeScore() for s in SYSTEMS}
    rows: dict[str, Any] = {}
    sizes: list[tuple[str, int, int, int]] = []
    for transcript in load_all():
        tokens = await _context_tokens(extractive, transcript.messages, transcript.format)
        history = HistoryInput(
            messages=transcript.messages,
            format=transcript.format,
            tools=transcript.tools or (),
            model=transcript.model,
            keep_recent_tokens=max(1, int(tokens * keep)),
        )
        inline_system = 0
        if transcript.format == "openai":
            while inline_system < len(transcript.messages) and transcript.messages[inline_system][
                "role"
            ] in ("system", "developer"):
                inline_system += 1
        row: dict[str, Any] = {}
        summary_tokens = 0
        for system, service in (("extractive", extractive), ("forgetful+restore", forgetful)):
            outcome = await service.compact(history, CompactOptions(force=True))
            assert outcome.compacted and outcome.messages is not None, (
                transcript.name,
                outcome.reason,
            )
            kept = len(outcome.messages) - inline_system - 1
            upto = len(transcript.messages) - kept
            summary = _summary_of(outcome.messages[inline_system:], transcript.format)
            row[system] = score_probes(scores[system], transcript, summary, upto, True)
            if system == "extractive":
                summary_tokens = tokenizer.count(summary)
                assert outcome.tokens_after is not None
                sizes.append(
                    (transcript.name, outcome.tokens_before, outcome.tokens_after, summary_tokens)
                )
                floor_upto = upto
        floor = trim_floor(
            folded_texts(transcript.messages[:floor_upto], transcript.format),
            summary_tokens,
            tokenizer,
        )
        row["trim floor"] = score_probes(scores["trim floor"], transcript, floor, floor_upto, False)
        rows[transcript.name] = row
    out[f"transcripts keep {keep:.0%}"] = {"rows": rows, "sizes": sizes}
    return scores


def print_probes(keep: float, scores: dict[str, ProbeScore], out: dict[str, Any]) -> None:
    print(f"\n### Real transcripts, keep newest {keep:.0%}: probes on the summary alone\n")
    labels = " | ".join(label for _, label in _PROBE_COLUMNS)
    print(f"| summarizer | {labels} | tool output in a section | filler items |")
    print("|---|" + "---|" * (len(_PROBE_COLUMNS) + 2))
    for system in SYSTEMS:
        s = scores[system]
        cells = []
        for attr, _label in _PROBE_COLUMNS:
            tally: Tally = getattr(s, attr)
            if system == "trim floor" and attr == "next_step":
                cells.append("–")
            else:
                cells.append(f"{tally.share()} ({tally.kept}/{tally.total})")
        noise = f"{s.noise} | {s.filler}" if system != "trim floor" else "– | –"
        print(f"| {system} | " + " | ".join(cells) + f" | {noise} |")
    examples = scores["extractive"].noise_examples
    if examples:
        print("\ntool output or filler items (extractive):")
        for e in examples[:12]:
            print(f"  - {e}")


def print_sizes(out: dict[str, Any], keep: float) -> None:
    sizes = out[f"transcripts keep {keep:.0%}"]["sizes"]
    print(f"\n### Tokens before → after, keep newest {keep:.0%} (extractive)\n")
    print("| transcript | before | after | summary | ratio |")
    print("|---|---|---|---|---|")
    for name, before, after, summary in sizes:
        print(f"| {name} | {before:,} | {after:,} | {summary:,} | {before / after:.2f}× |")


def timing_part(out: dict[str, Any]) -> None:
    biggest = max(load_all(), key=lambda t: len(json.dumps(t.messages)))
    parsed = FORMATS.get(biggest.format).parse(biggest.messages).messages

    def median(fn: Any, repeat: int = 5) -> float:
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    def summarize() -> None:
        # The summarizer remembers its last merges (for the restoration step after it):
        # forgotten before every run, so each one reads the transcript.
        cached = getattr(summarizer_module, "_merged", None)
        if cached is not None:
            cached.cache_clear()
        extractive_summary(parsed, None, None)

    ours = median(summarize)
    base = median(lambda: serialize_for_summary(parsed))
    print(f"\n### Summarizer time on the biggest transcript ({biggest.name})\n")
    print(
        f"{len(parsed)} messages: extractive summary {ours * 1000:.1f} ms; serializing them "
        f"for a model {base * 1000:.1f} ms; ratio {ours / base:.2f}×"
    )
    out["timing"] = {
        "transcript": biggest.name,
        "extractive_ms": ours * 1000,
        "serialize_ms": base * 1000,
    }


def budget_part(extractive: CompactionService, out: dict[str, Any]) -> None:
    tokens = []
    for shape in SHAPES:
        session = build_session(0, "dev", shape, rounds_total=10)
        results = asyncio.run(run_session(extractive, session, 0.3))
        tokens.append([t for _s, _u, t in results])
    print("\n### Summary tokens over 10 rounds (dev seed 0, keep 30%), per shape\n")
    for shape, series in zip(SHAPES, tokens, strict=True):
        print(f"- {shape}: " + " → ".join(f"{t:,}" for t in series))
    out["ten_rounds"] = dict(zip(SHAPES, tokens, strict=True))


def clearing_part(extractive: CompactionService) -> None:
    """Tool-result clearing alone (keep 3, forced, no model call) on the Claude Code
    transcripts: tokens before and after."""
    print("\n### Tool-result clearing on the real transcripts (keep 3, force, no model call)\n")
    print(f"  {'transcript':<54}{'before':>10}{'after':>10}{'saved':>8}{'cleared':>9}")
    for path in sorted((ROOT / "tests" / "data" / "claude_code").glob("*.[ao]*.json")):
        body = json.loads(path.read_text("utf-8"))
        history = HistoryInput(messages=body["messages"], model=body.get("model"))
        options = CompactOptions(force=True, strategy="clear_tool_results")
        outcome = asyncio.run(extractive.compact(history, options))
        after = outcome.tokens_after if outcome.compacted else outcome.tokens_before
        assert after is not None
        saved = 1 - after / outcome.tokens_before
        print(
            f"  {path.name:<54}{outcome.tokens_before:>10,}{after:>10,}{saved:>8.0%}"
            f"{len(outcome.cleared):>9}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds per set")
    parser.add_argument(
        "--sets",
        default="dev,dev-b,held-out,held-out-2,held-out-3,held-out-3-final,held-out-4,"
        "held-out-4-final,dev-c,held-out-5",
    )
    parser.add_argument("--parts", default="canaries,transcripts,budget,timing,clearing")
    parser.add_argument("--json", type=Path, help="write the raw numbers here")
    args = parser.parse_args()
    state = build_state(Settings(summarizer="extractive"))
    state.tokenizers.warm()
    extractive = state.compaction
    forgetful = CompactionService(extractive.estimation, ForgetfulModel(), marker=extractive.marker)
    out: dict[str, Any] = {}
    parts = args.parts.split(",")
    if "canaries" in parts:
        for name in args.sets.split(","):
            seeds = SETS[name][2]
            seeds = seeds[:2] if args.quick else seeds
            scores = asyncio.run(canary_part(extractive, forgetful, seeds, name))
            runs = f"{len(seeds)} seeds × {len(SHAPES)} shapes × {len(KEEP_FRACTIONS)} keep budgets"
            print_canaries(f"{name} ({runs})", scores, out)
    if "transcripts" in parts:
        for keep in (0.3,) if args.quick else (0.3, 0.1, 0.5):
            scores_t = asyncio.run(transcript_part(extractive, forgetful, keep, out))
            print_probes(keep, scores_t, out)
        print_sizes(out, 0.3)
    if "budget" in parts:
        budget_part(extractive, out)
    if "timing" in parts:
        timing_part(out)
    if "clearing" in parts:
        clearing_part(extractive)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
