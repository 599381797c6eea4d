"""Sentence-level checks of the extractive summarizer's reading of user words (issue 24).

Four lists of user sentences, each with the act it should be read as (a rule or a
preference both go under Constraints; a fact may be read as anything but chatter), and one
list of updates among distractors. They were written in turn, and each measured first
before it was read:

Counted as this module counts (on main, at 6653ceb, and now):

- LIST_1 (105): written first and read for the first fixes: 57 misread on main, 1 now.
- LIST_2 (56): written after those fixes and read for the second ones: 17 on main, 16
  after the first fixes, 3 now.
- LIST_3 (40): written after the second fixes and read for the last resort by words: 27
  on main, 24 before that last resort, 7 now.
- LIST_4 (40): written after all fixes to the classifier and never read for one: 26 on
  main, 18 after the last resort, 19 now ("before"/"until" stopped being rule words, a
  change made for the real transcripts' sizes). This is the figure for phrasings not seen.
- UPDATES (15 updates among 8 distractors): written after the change-cue words were
  added, so not independent of them: 10 failed on main (stale, or the new value missing),
  0 now.

Run: .venv/bin/python bench/fidelity_phrasings.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.extractive.statements import classify  # noqa: E402
from app.engine.extractive.summarizer import extractive_summary  # noqa: E402
from app.engine.messages import Block, BlockKind, Message, Role  # noqa: E402

R, P, Q, F = "rule", "preference", "request", "fact"
LIST_1 = [
    # safety / constraints
    (R, "Under no condition should the prod-eu cluster be rebooted."),
    (R, "The prod-eu cluster is not to be rebooted by anyone but me."),
    (R, "Rebooting prod-eu is my call alone."),
    (R, "Keep your changes out of vendor/ entirely."),
    (R, "Anything in vendor/ is off-limits for edits."),
    (R, "Secrets like the ZK-4410 token stay out of commit messages."),
    (R, "The ZK-4410 token must not appear in any commit message."),
    (R, "Pushing straight to main is a no-go."),
    (R, "Direct pushes to main are forbidden here."),
    (R, "I'll be upset if the staging database gets dropped again."),
    (R, "Before you run any migration on db7.internal, check with me first."),
    (R, "Ping me before touching db7.internal."),
    (R, "The deploy window closes at 16:30 sharp, nothing ships after that."),
    (R, "Total cloud spend for this experiment has a ceiling of $1200."),
    (R, "We can spend up to $1200 on GPUs this month and not a cent more."),
    (R, "Memory usage has to stay under 512 MB on the device."),
    (R, "The bundle needs to fit in 300 KB."),
    (R, "Stick to the standard library; third-party packages are out."),
    (R, "Third-party packages are out for this one."),
    (R, "Only read access to the billing tables, please."),
    (R, "Support for Python 3.9 must be preserved."),
    (R, "Python 3.9 support is a hard requirement."),
    (R, "The public API of mylib must stay backwards compatible."),
    (R, "Breaking the public API is unacceptable."),
    (R, "Tests are not optional: every new function gets one."),
    (R, "Every new function gets a test."),
    (R, "Run the linter before each commit."),
    (R, "Each PR should touch at most 5 files."),
    (R, "Refrain from using global state."),
    (R, "Global state is a big no for me."),
    (R, "The CLI is expected to exit within 2 seconds."),
    (R, "Response times over 200 ms are a failure."),
    (R, "Timeouts are capped at 30 seconds across the board."),
    (R, "Leave the Makefile as it is."),
    (R, "The Makefile is frozen."),
    (R, "Dont touch the Makefile"),
    (R, "no sudo"),
    (R, "Nothing gets deleted without a backup first."),
    (R, "Make a backup before deleting anything."),
    (R, "Deleting files requires a backup first."),
    (R, "Customer PII never leaves the eu-west-1 region."),
    (R, "PII stays in eu-west-1."),
    (R, "All logs are to be written in JSON."),
    (R, "Logs go out as JSON."),
    (R, "The team requires two approvals on every merge."),
    (R, "Our security team bans eval() in the codebase."),
    (R, "Using eval() is banned."),
    (R, "Dependencies are to be pinned to exact versions."),
    # preferences
    (P, "I'm partial to small, focused commits."),
    (P, "Small, focused commits work best for me."),
    (P, "Shorter answers are better for me."),
    (P, "Terse answers, please."),
    (P, "Keep the answers brief."),
    (P, "The user is happiest with bullet lists over prose."),
    (P, "Bullet lists over prose, if you can."),
    (P, "Prose is fine but bullets are nicer."),
    (P, "My preferred test runner is pytest."),
    (P, "pytest is what I'd reach for."),
    (P, "Personally, I find tabs easier to read than spaces."),
    (P, "Tabs over spaces in this repo."),
    (P, "Dana likes her PR descriptions to start with a summary line."),
    (P, "Our team leans on type hints everywhere."),
    (P, "Type hints everywhere, thanks."),
    (P, "Go light on comments."),
    (P, "Explanations in plain English, no jargon."),
    (P, "Plain English explanations suit me better."),
    (P, "I'd appreciate it if you used f-strings."),
    (P, "F-strings over .format(), always."),
    (P, "Use metric units in any output."),
    (P, "Metric units, not imperial."),
    (P, "Temperatures in Celsius for me."),
    (P, "Camel case looks wrong to me in Python."),
    # requests / goals
    (Q, "Your job today: get the flaky test_upload passing again."),
    (Q, "The flaky test_upload needs fixing."),
    (Q, "test_upload is flaky and I want it fixed."),
    (Q, "I want the CSV importer rewritten to stream rows."),
    (Q, "Let's get the CSV importer streaming rows instead of loading everything."),
    (Q, "The next milestone is a working login page."),
    (Q, "Next milestone: a working login page."),
    (Q, "We should get retries into the HTTP client."),
    (Q, "The HTTP client could use retries."),
    (Q, "Retries in the HTTP client would be the next thing."),
    (Q, "Mind adding a --dry-run flag to the sync command?"),
    (Q, "Would you add a --dry-run flag to the sync command?"),
    (Q, "I'm hoping you can port the scheduler to asyncio."),
    (Q, "Porting the scheduler to asyncio is the priority."),
    (Q, "Priority one is porting the scheduler to asyncio."),
    (Q, "Can the report generator produce PDF as well?"),
    (Q, "Time to tackle the memory leak in the worker pool."),
    (Q, "Focus on the memory leak in the worker pool now."),
    (Q, "Up next, the memory leak in the worker pool."),
    (Q, "I need a migration that adds an index on orders.created_at."),
    (Q, "An index on orders.created_at is needed."),
    (Q, "The goal for this week is shipping the export feature."),
    (Q, "Get the docs site building on CI."),
    (Q, "Please look into why the nightly job fails."),
    (Q, "The nightly job keeps failing, find out why."),
    # facts
    (F, "The staging box is stg-04.internal."),
    (F, "Our main branch is called trunk."),
    (F, "The database password lives in vault at secret/db."),
    (F, "Dana Vrabel owns the billing service."),
    (F, "The release is scheduled for March 3."),
    (F, "We have about 1200 active tenants."),
    (F, "The API rate limit upstream is 600 requests per minute."),
    (F, "Builds run on a Jenkins box called jk2."),
]
LIST_2 = [
    (R, "Production credentials are never to be pasted into chat."),
    (R, "We don't do force pushes on shared branches."),
    (R, "Force pushes on shared branches aren't done here."),
    (R, "Migrations against the live db need a second pair of eyes."),
    (R, "Keep every function under 40 lines."),
    (R, "Functions longer than 40 lines get rejected in review."),
    (R, "Our linter config is final, so leave pyproject.toml's [tool.ruff] section alone."),
    (R, "The customer dataset must stay anonymised at all times."),
    (R, "Don't ever email the customer list."),
    (R, "The `prod` Kubernetes context is read-only for you."),
    (R, "You're only allowed to touch files under src/."),
    (R, "Stay inside src/ with your edits."),
    (R, "Edits outside src/ will be reverted."),
    (R, "The maximum payload is 2 MB."),
    (R, "Payloads bigger than 2 MB get rejected by the gateway, so keep them smaller."),
    (R, "Please never commit the .env file."),
    (R, "The .env file is not to be committed."),
    (R, "Committing .env would leak our keys, so don't."),
    (R, "Latency must remain below 120 ms."),
    (R, "We're on a strict 4 GB memory budget."),
    (R, "Any change to the schema goes through me."),
    (R, "Schema changes go through me first."),
    (R, "Every endpoint needs an auth check."),
    (R, "Don’t add new dependencies without asking."),
    (R, "Adding dependencies is fine only after I approve."),
    (R, "The test suite has to pass before you open a PR."),
    (P, "I like my diffs small."),
    (P, "Small diffs make me happy."),
    (P, "My team would rather see dataclasses than dicts."),
    (P, "Dataclasses beat dicts for this codebase."),
    (P, "Ruby-style blocks aren't my thing."),
    (P, "Sorting imports alphabetically is how I like it."),
    (P, "Descriptive variable names, always."),
    (P, "Kindly answer in German."),
    (P, "Answers in German would be ideal."),
    (P, "Mia prefers reviewing one PR per feature."),
    (P, "Use British spelling in docs."),
    (P, "I'm more of a pytest person than unittest."),
    (Q, "Add pagination to the /orders endpoint."),
    (Q, "The /orders endpoint should get pagination."),
    (Q, "Pagination for /orders is next."),
    (Q, "Can you get pagination onto /orders?"),
    (Q, "I'd like /orders paginated."),
    (Q, "What I'm after is a faster cold start for the lambda."),
    (Q, "The lambda's cold start is too slow; speed it up."),
    (Q, "Today's job is wiring Sentry into the worker."),
    (Q, "Let's wire Sentry into the worker today."),
    (Q, "Our aim: wiring Sentry into the worker."),
    (Q, "Help me migrate the settings to pydantic v2."),
    (Q, "Migrating the settings to pydantic v2 is what I need."),
    (Q, "So the settings need to move to pydantic v2."),
    (F, "Sentry's DSN is in the SENTRY_DSN variable."),
    (F, "The worker runs on 4 cores."),
    (F, "Marta is the reviewer for infra changes."),
    (F, "Our staging URL is https://stg.acme.dev."),
    (F, "The repo uses poetry."),
]
LIST_3 = [
    (R, "Whatever happens, the billing cron on box-3 stays untouched."),
    (R, "Nobody runs terraform apply except through the pipeline."),
    (R, "terraform apply only runs through the pipeline."),
    (R, "Keys for the HSM never leave the vault."),
    (R, "There's a hard freeze on the payments repo until the 14th."),
    (R, "The payments repo is in a code freeze until the 14th."),
    (R, "Downtime for the checkout service is out of the question."),
    (R, "Our budget for API calls tops out at $300."),
    (R, "We can't go over 8 GPUs."),
    (R, "Builds longer than 20 minutes count as broken."),
    (R, "No more than two retries per request."),
    (R, "Two retries per request, tops."),
    (R, "I need every SQL query parameterised."),
    (R, "Parameterise every SQL query."),
    (R, "Every SQL query gets parameterised, no exceptions."),
    (R, "Hardcoding secrets is a firing offence here."),
    (R, "Talk to Omar before changing anything in auth/."),
    (R, "Changes to auth/ need Omar's blessing."),
    (P, "Answers with code first, explanation after, work best."),
    (P, "Code first, explanation after."),
    (P, "The less prose the better."),
    (P, "I'm a big fan of early returns."),
    (P, "Early returns over nested ifs for me."),
    (P, "Early returns read much better than nested ifs."),
    (P, "Sam is picky about trailing commas and wants them everywhere."),
    (P, "I tend to prefer pathlib to os.path."),
    (P, "pathlib please, not os.path."),
    (P, "Snake case for file names works for us."),
    (Q, "The thing to build is a retry wrapper around the S3 client."),
    (Q, "A retry wrapper around the S3 client is what this session is for."),
    (Q, "This session is about adding a retry wrapper to the S3 client."),
    (Q, "We're here to add a retry wrapper to the S3 client."),
    (Q, "The plan is to add a retry wrapper to the S3 client."),
    (Q, "Our target this week: a retry wrapper around the S3 client."),
    (Q, "The S3 client still lacks retries, and that's today's work."),
    (Q, "Today we're adding retries to the S3 client."),
    (Q, "The remaining piece is the retry wrapper for S3."),
    (Q, "Still to do: a retry wrapper for the S3 client."),
    (Q, "Could the S3 client get a retry wrapper?"),
    (Q, "It would be great to have retries on the S3 client."),
]
LIST_4 = [
    (R, "The Friday release train leaves without us if tests are red, so red means no merge."),
    (R, "Red CI means no merge."),
    (R, "Our SLA says 99.9% uptime, so zero-downtime deploys only."),
    (R, "Customer names get masked in every log line."),
    (R, "Feature flags default to off."),
    (R, "New endpoints go behind the feature flag."),
    (R, "The old v1 API stays up until every client has moved."),
    (R, "You have read access to the warehouse, nothing more."),
    (R, "Credentials belong in the secrets manager, not in code."),
    (R, "The ops team owns the load balancer config; hands off."),
    (R, "Budget-wise we're capped at 40 hours for this."),
    (R, "This box has 2 GB of RAM, so nothing memory-hungry."),
    (R, "Keep the bundle lean: 150 KB gzipped is the ceiling."),
    (R, "Tests live next to the code, in the same folder."),
    (R, "Each migration has to be reversible."),
    (P, "I find black's formatting fine, so just run it."),
    (P, "Short variable names bug me."),
    (P, "Honestly, a table would be nicer than a paragraph here."),
    (P, "Emoji in commit messages are a bit much for me."),
    (P, "Lowercase commit subjects look tidier."),
    (P, "Give me the answer first, then the reasoning."),
    (P, "I'd rather you ask than guess."),
    (P, "When in doubt, ask me instead of guessing."),
    (P, "Prefer composition to inheritance here."),
    (P, "Docstrings in Google style suit the team."),
    (Q, "The signup form needs an email confirmation step."),
    (Q, "Signup should send a confirmation email."),
    (Q, "Users can't reset their password yet, which is what we're fixing."),
    (Q, "The broken password reset is our problem for today."),
    (Q, "Password reset is broken again; that's the job."),
    (Q, "What needs doing is the password reset flow."),
    (Q, "Let's see the password reset working end to end."),
    (Q, "I'm after a working password reset."),
    (Q, "Password reset first, everything else later."),
    (Q, "Implementing password reset is on you."),
    (F, "The warehouse is Snowflake."),
    (F, "Omar wrote most of the auth module."),
    (F, "The cluster runs Kubernetes 1.29."),
    (F, "We deploy from GitHub Actions."),
    (F, "Our biggest customer is Globex."),
]
BACKGROUND = [
    "Never run migrations on db-main.internal without asking.",
    "The staging API lives at api.stg.acme.dev.",
    "Our sprint ends on 2024-06-14.",
    "Keep functions under 50 lines.",
    "Marta Klein reviews all infra changes.",
    "Prefer `ruff` over flake8.",
    "The worker pool has 12 processes.",
    "Releases go out at 15:00 on Tuesdays.",
]
UPDATES = [
    (
        "The message queue is rabbit-2.internal.",
        "We've gone to kafka-7.internal for messaging these days.",
        "rabbit-2.internal",
        "kafka-7.internal",
    ),
    ("Max upload size is 25 MB.", "Uploads can be up to 40 MB starting today.", "25 MB", "40 MB"),
    (
        "Priya Shah is the product owner.",
        "Product ownership was handed over to Tom Reyes.",
        "Priya Shah",
        "Tom Reyes",
    ),
    (
        "The feature branch is `feat/payments-v2`.",
        "Oops, I meant `feat/payments-v3` for the branch.",
        "feat/payments-v2",
        "feat/payments-v3",
    ),
    (
        "Use Node 18 for the frontend build.",
        "The frontend build is on Node 20 now.",
        "Node 18",
        "Node 20",
    ),
    (
        "The cron job runs at 02:00.",
        "Effective immediately, the cron job fires at 03:30.",
        "02:00",
        "03:30",
    ),
    (
        "The S3 bucket for exports is acme-exports-eu.",
        "Exports now land in acme-exports-us instead.",
        "acme-exports-eu",
        "acme-exports-us",
    ),
    (
        "Our monthly API budget is $900.",
        "Finance raised the API spend ceiling to $1400.",
        "$900",
        "$1400",
    ),
    (
        "The logs retention is 14 days.",
        "Log retention has been changed to 30 days.",
        "14 days",
        "30 days",
    ),
    (
        "The design doc lives in docs/design.md.",
        "The design doc was renamed to docs/architecture.md.",
        "docs/design.md",
        "docs/architecture.md",
    ),
    (
        "Timeout for the payment call is 8 seconds.",
        "Typo earlier: the payment call timeout is 12 seconds.",
        "8 seconds",
        "12 seconds",
    ),
    (
        "We support Postgres 13 and newer.",
        "Minimum Postgres is 15 these days.",
        "Postgres 13",
        "15",
    ),
    (
        "The on-call phone is +1-555-0100.",
        "On-call moved to +1-555-0199.",
        "+1-555-0100",
        "+1-555-0199",
    ),
    ("The default locale is en-US.", "Switch the default locale to de-DE.", "en-US", "de-DE"),
    (
        "Batch size for the importer is 500 rows.",
        "Importer batches are 2000 rows from now on.",
        "500 rows",
        "2000 rows",
    ),
]


def misread(cases: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(wanted, read, sentence) for each sentence read as the wrong act."""
    wrong = []
    for want, text in cases:
        got = classify(text).value
        rule_like = want in (R, P) and got in (R, P)
        if got != want and not rule_like and not (want == F and got in (R, P, Q)):
            wrong.append((want, got, text))
    return wrong


def _message(role: Role, text: str) -> Message:
    return Message(role=role, blocks=(Block(kind=BlockKind.TEXT, text=text),))


def stale_updates() -> list[str]:
    """The updates after which the old value is still presented as current, or the new
    one missing, or a distractor replaced."""
    failed = []
    for old, new, old_value, new_value in UPDATES:
        messages = [
            _message(Role.USER, "Build the billing exporter."),
            _message(Role.ASSISTANT, "ok"),
        ]
        for text in [*BACKGROUND[:4], old, *BACKGROUND[4:], new]:
            messages += [_message(Role.USER, text), _message(Role.ASSISTANT, "Noted.")]
        summary = extractive_summary(tuple(messages), None, None)
        current = [line.split(" (replaces earlier:")[0] for line in summary.splitlines()]
        stale = any(old_value in line for line in current) and old_value not in new
        missing = not any(new_value in line for line in current)
        lost = [
            b for b in BACKGROUND if not any(b.split()[-1].rstrip(".") in line for line in current)
        ]
        if stale or missing or lost:
            failed.append(f"{old} -> {new}")
    return failed


def main() -> None:
    for name, cases in (
        ("LIST_1", LIST_1),
        ("LIST_2", LIST_2),
        ("LIST_3", LIST_3),
        ("LIST_4", LIST_4),
    ):
        wrong = misread(cases)
        print(f"{name}: {len(wrong)} of {len(cases)} misread")
        for want, got, text in wrong:
            print(f"  {want} -> {got}: {text}")
    failed = stale_updates()
    print(f"UPDATES: {len(failed)} of {len(UPDATES)} stale, missing or replacing a distractor")
    for f in failed:
        print(f"  {f}")


if __name__ == "__main__":
    main()
