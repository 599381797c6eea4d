"""SPEC §14: what the user says is kept in its section, and a changed value only as current."""

from __future__ import annotations

import pytest

from tests.unit.test_extractive import _said, assistant, section, summarize, user

CONSTRAINTS = "## Constraints & Preferences"
GOAL = "## Goal"


@pytest.mark.parametrize(
    "said",
    [
        "Pushing straight to `main` is a no-go.",
        "Anything in vendor/ is off-limits for edits.",
        "The Makefile is frozen.",
        "Using eval() is banned in `billing_3`.",
        "Rebooting prod-eu is my call alone.",
        "Ping me before touching db7.internal.",
        "I'll be upset if the staging database gets dropped again.",
        "Run the linter before each commit.",
        "Total cloud spend for this experiment has a ceiling of $1200.",
        "The deploy window closes at 16:30 sharp, nothing ships after that.",
        "Support for Python 3.9 must be preserved.",
        "Explanations in plain English, no jargon.",
        "no sudo",
        "Schema changes go through me first.",
        "Edits outside src/ will be reverted.",
    ],
)
def test_a_rule_said_as_a_verdict_habit_or_fragment_is_a_constraint(said: str) -> None:
    summary = summarize(_said(said))
    assert said.rstrip(".") in section(summary, CONSTRAINTS)


@pytest.mark.parametrize(
    "said",
    [
        "Tabs over spaces in this repo.",
        "Terse answers, please.",
        "Shorter answers are better for me.",
        "I'm partial to small, focused commits.",
        "Camel case looks wrong to me in Python.",
        "Metric units, not imperial.",
        "Small diffs make me happy.",
    ],
)
def test_a_liking_said_as_a_choice_or_about_oneself_is_a_preference(said: str) -> None:
    summary = summarize(_said(said))
    assert said.rstrip(".") in section(summary, CONSTRAINTS)


@pytest.mark.parametrize(
    "said",
    [
        "test_upload is flaky and I want it fixed.",
        "An index on orders.created_at is needed.",
        "Priority one is porting the scheduler to asyncio.",
        "I want the `nebula_3` parser to handle empty files without crashing.",
        "Mind adding a --dry-run flag to the sync command?",
        "Pagination for /orders is next.",
        "The lambda's cold start is too slow; speed it up.",
    ],
)
def test_work_said_as_a_need_a_priority_or_a_wish_is_in_the_goal(said: str) -> None:
    summary = summarize(_said(said))
    goal = section(summary, GOAL)
    assert said.rstrip(".?") in goal
    assert said.rstrip(".?") not in section(summary, CONSTRAINTS)


def _current(summary: str, value: str) -> list[str]:
    """Summary lines that present `value` as current (not only in the quote of what an
    update replaced)."""
    return [line for line in summary.splitlines() if value in line.split(" (replaces earlier:")[0]]


def test_an_update_in_near_synonyms_replaces_the_value_it_changes() -> None:
    summary = summarize(
        _said(
            "The vendor's sandbox is umber5.example.",
            "Requests to tundra9.example are rate limited to 45 per minute.",
            "Not related, but it is forbidden to disable TLS verification for raven6.example.",
            "The supplier's test environment has changed, it's kestrel6.example going forward.",
        )
    )
    assert not _current(summary, "umber5.example")
    assert _current(summary, "kestrel6.example")
    # The others are untouched and still current.
    assert _current(summary, "tundra9.example") and _current(summary, "raven6.example")


def test_the_users_habitual_lead_in_ties_no_update_to_an_unrelated_statement() -> None:
    summary = summarize(
        _said(
            "Not related, but standup is at 16:00 every day.",
            "Not related, but go with plain asserts rather than `hypothesis` matchers.",
            "hey, the memory limit is 512 MB.",
            "hey, the daily meeting has changed, it's 20:00 going forward.",
        )
    )
    assert not _current(summary, "16:00")
    constraints = section(summary, CONSTRAINTS)
    assert "plain asserts" in constraints and "replaces earlier" not in constraints


def test_an_update_that_sets_aside_the_quoted_value_replaces_it() -> None:
    summary = summarize(
        _said(
            "For logging I'd go with `tenacity` over print statements.",
            "Ignore the tenacity I gave you; the log library is polars.",
        )
    )
    assert not _current(summary, "`tenacity` over print")
    assert "polars" in section(summary, CONSTRAINTS)


def test_a_second_update_finds_the_value_by_either_of_its_wordings() -> None:
    summary = summarize(
        _said(
            "The nightly export kicks off at 04:45 UTC.",
            "Please hold off on any deploys after 17:45 on Fridays.",
            "Change of plan for when the overnight dump starts, make it 06:15.",
            "Update: the nightly export = 07:30.",
        )
    )
    assert not _current(summary, "04:45") and not _current(summary, "06:15")
    assert _current(summary, "07:30") and _current(summary, "17:45")


_BACKGROUND = (
    "Never run migrations on db-main.internal without asking.",
    "Keep functions under 50 lines.",
    "The worker pool has 12 processes.",
    "Releases go out at 15:00 on Tuesdays.",
)


@pytest.mark.parametrize(
    ("old", "new", "old_value", "new_value"),
    [
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
        ("We support Postgres 13 and newer.", "Minimum Postgres is 15 these days.", "13", "15"),
        (
            "The message queue is rabbit-2.internal.",
            "We've gone to kafka-7.internal for messaging these days.",
            "rabbit-2.internal",
            "kafka-7.internal",
        ),
        (
            "The cron job runs at 02:00.",
            "Effective immediately, the cron job fires at 03:30.",
            "02:00",
            "03:30",
        ),
    ],
)
def test_a_change_said_as_when_it_starts_or_what_it_became_replaces_the_old_value(
    old: str, new: str, old_value: str, new_value: str
) -> None:
    summary = summarize(_said(*_BACKGROUND[:2], old, *_BACKGROUND[2:], new))
    assert not _current(summary, old_value)
    assert _current(summary, new_value)
    # Nothing else was taken for the value it changed.
    for said in _BACKGROUND:
        assert _current(summary, said.rstrip("."))


def test_an_update_opening_the_next_folded_part_still_replaces_the_value() -> None:
    first = summarize(
        _said(
            "Please make sure nothing ever gets written to the `amber6` bucket.",
            "Keep functions under 4 lines.",
        )
    )
    # The next compaction folds messages that open with the update: it is no new task.
    later = [
        user("The write-protected bucket has changed, it's pylon9 going forward."),
        assistant("Noted."),
    ]
    summary = summarize(later, previous=first)
    assert not _current(summary, "amber6")
    assert "pylon9" in section(summary, CONSTRAINTS)


@pytest.mark.parametrize(
    ("old", "new", "old_value", "new_value"),
    [
        (
            "The metrics endpoint is served on port 7273.",
            "The metrics port moved to 9365 as of today.",
            "7273",
            "9365",
        ),
        (
            "The whole thing needs to fit in 46 MB of RAM.",
            "The memory budget has changed, it's 25 going forward.",
            "46 MB",
            "25",
        ),
    ],
)
def test_an_update_is_matched_to_its_subject_not_to_a_limit_of_another_kind(
    old: str, new: str, old_value: str, new_value: str
) -> None:
    summary = summarize(_said("Please keep functions under 4 lines.", old, new))
    assert not _current(summary, old_value)
    assert _current(summary, new_value)
    assert _current(summary, "functions under 4 lines")


@pytest.mark.parametrize(
    "update",
    [
        "The mocking library has changed — respx.",
        "Quick correction on the mocking library: it's respx now.",
        "Please use respx for the mocking library from today.",
    ],
)
def test_an_update_giving_its_value_as_a_plain_word_replaces_the_quoted_one(update: str) -> None:
    summary = summarize(
        _said(
            "Personally I like `polars` for HTTP mocking.", "Keep functions under 4 lines.", update
        )
    )
    assert not _current(summary, "`polars`")
    assert _current(summary, "respx")
    assert _current(summary, "functions under 4 lines")


def test_an_update_that_sets_a_value_aside_changes_the_item_stating_it_not_the_new_value() -> None:
    summary = summarize(
        _said(
            "Only `structlog` may be added as a new dependency; nothing else.",
            "Personally I like `attrs` for HTTP mocking.",
            "Actually, the mocking library is structlog, not attrs.",
        )
    )
    # structlog is the new value, attrs the one set aside: the dependency rule stands.
    assert not _current(summary, "`attrs`")
    assert _current(summary, "Only `structlog` may be added")
    assert "may be added as a new dependency; nothing else." in section(summary, CONSTRAINTS)
    dependency = [line for line in summary.splitlines() if "new dependency" in line]
    assert dependency and not any("replaces earlier" in line for line in dependency)


def test_a_value_set_aside_with_its_full_stop_still_names_the_old_amount() -> None:
    summary = summarize(
        _said(
            "Spending on the labeling vendor must not pass $700 this quarter.",
            "Actually, the labeling spend cap is $8000, not $700.",
        )
    )
    assert not _current(summary, "must not pass $700")
    assert _current(summary, "$8000")


def test_an_update_shaped_as_a_request_naming_the_old_amount_is_no_new_goal() -> None:
    summary = summarize(
        _said(
            "Spend no more than $8700 on cloud resources this month.",
            "Keep functions short.",
            "Update on the cloud spend limit: $6500, not $8700.",
        )
    )
    assert "$6500" not in section(summary, GOAL)
    assert not _current(summary, "than $8700")
    assert "$6500" in section(summary, CONSTRAINTS)


def test_an_update_to_a_limit_of_the_same_shape_finds_its_subject_not_a_shared_per() -> None:
    summary = summarize(
        _said(
            "Queries against the warehouse are limited to 50 seconds each.",
            "Keep each migration under 9 statements.",
            "Please use 14 for the per-migration statement limit from today.",
            "New info: the per-query time limit became 75.",
        )
    )
    assert not _current(summary, "50 seconds")
    assert _current(summary, "became 75")
    assert _current(summary, "Please use 14")


@pytest.mark.parametrize(
    "said",
    [
        "Anything that emails real customers needs my explicit go-ahead first.",
        "Also If a command would touch onyx-31.internal, stop and ask me; that box is production.",
    ],
)
def test_a_rule_over_whatever_it_covers_or_a_condition_to_stop_is_a_constraint(said: str) -> None:
    summary = summarize(_said(said))
    assert said.rstrip(".").split("Also ")[-1] in section(summary, CONSTRAINTS)


def test_work_said_as_the_next_piece_of_work_is_in_the_goal() -> None:
    said = "The next piece of work is a dashboard page for `falcon_5` usage."
    summary = summarize(_said(said))
    assert said.rstrip(".") in section(summary, GOAL)


def test_a_universal_pronoun_with_no_scope_states_no_rule() -> None:
    summary = summarize(_said("Everything works now, the logs look clean."))
    assert "Everything works" not in section(summary, CONSTRAINTS)


def test_a_plain_word_of_an_update_with_a_value_of_its_own_replaces_no_other_rule() -> None:
    summary = summarize(
        _said(
            "Dana Vrabel owns the payments service, ask them about anything there.",
            "No GPL code can go into `jasper_4`.",
            "Quick correction regarding whoever is responsible for billing code: it's Chidi "
            "Okafor.",
        )
    )
    assert _current(summary, "No GPL code can go into `jasper_4`")
    assert "Chidi Okafor" in summary
    gpl = [line for line in summary.splitlines() if "GPL" in line]
    assert gpl and not any("replaces earlier" in line for line in gpl)


def test_an_update_naming_the_new_person_after_a_colon_replaces_the_old_one() -> None:
    summary = summarize(
        _said(
            "For context, the on-call engineer this week is Chidi Okafor.",
            "Keep functions under 4 lines.",
            "Update on this week's on-call engineer: Bo Lindqvist, not Chidi Okafor.",
        )
    )
    assert not _current(summary, "this week is Chidi Okafor")
    assert _current(summary, "Bo Lindqvist")


@pytest.mark.parametrize(
    ("old", "update", "old_value", "new_value"),
    [
        # The change said by what the value was.
        (
            "Never copy customer exports off jasper-9.internal.",
            "The host holding the exports: cobalt-3.internal (was jasper-9.internal).",
            "off jasper-9.internal",
            "cobalt-3.internal",
        ),
        # The subject named in a fragment before the statement of the value.
        (
            "The Grafana instance is at indigo-23.internal.",
            "Oh, the dashboards host. That's raven-32.internal now.",
            "indigo-23.internal",
            "raven-32.internal",
        ),
        # A plain-word value after a noun phrase and a colon, or after "got it wrong".
        (
            "Stick with `orjson` for serialization.",
            "The serialization library: structlog (was orjson).",
            "`orjson` for",
            "structlog",
        ),
        (
            "Stick with `orjson` for serialization.",
            "I got it wrong earlier: the serialization library is hypothesis.",
            "`orjson` for",
            "hypothesis",
        ),
        # A request that only sets the value.
        (
            "SSH on the bastion uses port 2222.",
            "Make the bastion SSH port 4411 instead.",
            "2222",
            "4411",
        ),
        (
            "I prefer `attrs` for date handling.",
            "Make the date library hypothesis instead.",
            "`attrs` for",
            "hypothesis",
        ),
    ],
)
def test_an_update_in_a_short_or_request_form_replaces_the_value_it_changes(
    old: str, update: str, old_value: str, new_value: str
) -> None:
    summary = summarize(_said(old, "Keep functions under 4 lines.", update))
    assert not _current(summary, old_value)
    assert _current(summary, new_value)
    assert _current(summary, "functions under 4 lines")
    assert new_value not in section(summary, GOAL)


def test_a_later_request_a_rule_changes_leaves_the_goal_for_the_rule_that_replaced_it() -> None:
    summary = summarize(
        _said(
            "Please write changelog entries in CHF-style plain English.",
            "Changing the changelog style to SEK.",
        )
    )
    assert "CHF" not in section(summary, GOAL)
    assert not _current(summary, "CHF-style")
    assert "SEK" in section(summary, CONSTRAINTS)


def test_a_fragment_with_a_clause_of_its_own_is_no_subject_for_the_next_sentence() -> None:
    summary = summarize(_said("Thanks, that works. It's 5 tests now."))
    assert "Thanks, that works. It's" not in summary


@pytest.mark.parametrize(
    "said",
    [
        "The client won't allow any scraping of falcon7.example.",
        "Target Go 3.12 for the new service.",
    ],
)
def test_a_permission_refused_or_a_target_to_build_for_is_a_constraint(said: str) -> None:
    assert said.rstrip(".") in section(summarize(_said(said)), CONSTRAINTS)


def test_wanting_a_named_thing_done_is_work_in_the_goal() -> None:
    said = "I want `vesper_2` split into smaller files."
    assert said.rstrip(".") in section(summarize(_said(said)), GOAL)


@pytest.mark.parametrize(
    "said",
    [
        "Would be great to have a retry button on the `amber_2` page.",
        "Hoping you can speed up `dune_2` startup.",
        "The `ember_3` parser is broken, sort it out.",
        "Your next assignment: a CSV export for `iris_5`.",
        "Switch focus to the `krill_7` dashboard.",
        "We'll need a health endpoint in `onyx_4` by Friday.",
        "`quartz_6` needs a rewrite.",
        "Time for you to document `cobalt_5`.",
        "I'd appreciate a test suite for `juniper_8`.",
        "I'm asking you to merge `cinder_2` and `dune_5`.",
        "Fixing `zephyr_6` comes first.",
    ],
)
def test_work_asked_as_a_need_a_wish_or_of_the_agent_by_name_is_in_the_goal(said: str) -> None:
    summary = summarize(_said(said))
    assert said.rstrip(".?") in section(summary, GOAL)


@pytest.mark.parametrize(
    "said",
    [
        "The `secrets/` folder is not for your eyes.",
        "Rebooting amber-2.internal is not something you do.",
        "Backups in data/bk_2/ are sacred.",
        "Make no changes to `config/prod.yaml`.",
        "Absolutely no `rm -rf` on shared volumes.",
        "Do nothing on prod-eu without a change ticket.",
    ],
)
def test_a_safety_rule_said_as_whose_it_is_not_or_as_nothing_to_do_is_a_constraint(
    said: str,
) -> None:
    assert said.rstrip(".") in section(summarize(_said(said)), CONSTRAINTS)


def test_make_no_mistake_is_no_rule() -> None:
    summary = summarize(_said("Make no mistake, the parser is slow."))
    assert "Make no mistake" not in section(summary, CONSTRAINTS)


@pytest.mark.parametrize(
    "said",
    [
        "My go-to is `pytest` fixtures over setUp.",
        "Short commit subjects are my thing.",
        "Type hints help me read code faster.",
        "`black` formatting is what I'm used to.",
        "I usually write SQL in uppercase.",
        "Sorting imports with isort keeps me sane.",
        "Emoji in commit messages annoy me.",
    ],
)
def test_a_liking_said_as_a_habit_or_what_it_does_to_the_user_is_a_preference(said: str) -> None:
    assert said.rstrip(".") in section(summarize(_said(said)), CONSTRAINTS)


@pytest.mark.parametrize(
    "said",
    [
        "Python 3.9 is the floor for this package.",
        "Build time should stay under 10 minutes.",
        "Postgres 14 is the oldest we support.",
        "We target 99.9% uptime.",
        "The timeout is 30 seconds, hard.",
        "The deadline is Friday 17:00.",
    ],
)
def test_a_bound_said_as_what_the_value_is_is_a_constraint(said: str) -> None:
    assert said.rstrip(".") in section(summarize(_said(said)), CONSTRAINTS)


def test_an_update_that_fits_a_fact_leaves_a_later_request_in_the_goal() -> None:
    summary = summarize(
        _said(
            "Unrelated to the failing test: What's left is porting `basalt_4` to the new "
            "payments API.",
            "The container base image is `python:3.11-iris`.",
            "Unrelated to the failing test: Change of plan for the Docker starting point, "
            "make it python:1.24-dune.",
        )
    )
    assert "porting `basalt_4`" in section(summary, GOAL)
    assert not _current(summary, "python:3.11-iris")


def test_a_rule_sharing_one_word_with_a_later_request_replaces_no_goal() -> None:
    summary = summarize(
        _said(
            "Next up: rename `marlin_dune` to something readable across the codebase.",
            "The `lotus_mesa` table is read-only for you; no UPDATE or DELETE statements.",
        )
    )
    assert "rename `marlin_dune`" in section(summary, GOAL)
    assert "replaces earlier" not in summary


def test_an_update_matches_an_item_said_once_in_its_words_over_one_that_replaced_another() -> None:
    summary = summarize(
        _said(
            "Keep answers under 10 sentences.",
            "Responses must be at most 76 lines long.",
            "Update: use 53 instead of 10 for the answer length.",
            "Correction: the response length limit is now 21.",
        )
    )
    assert not _current(summary, "76 lines")
    assert _current(summary, "use 53 instead of 10")


def test_an_update_of_the_prod_box_leaves_the_pre_prod_database_alone() -> None:
    summary = summarize(
        _said(
            "The staging database lives on amber-34.internal.",
            "Treat basalt-14.internal as production; touching it needs my sign-off.",
            "I got it wrong earlier: where the pre-prod DB runs is indigo-7.internal.",
            "The box that counts as prod has changed, it's falcon-18.internal going forward.",
        )
    )
    assert not _current(summary, "basalt-14.internal")
    assert _current(summary, "indigo-7.internal")
    assert _current(summary, "falcon-18.internal")


@pytest.mark.parametrize(
    "update",
    [
        "The currency I read amounts in is no longer CHF — it's JPY.",
        "Oh, the currency I read amounts in. That's JPY now.",
    ],
)
def test_an_update_setting_aside_a_code_or_naming_its_subject_with_a_clause_replaces_it(
    update: str,
) -> None:
    summary = summarize(_said("Show me money as CHF, please.", "Keep functions short.", update))
    assert not _current(summary, "money as CHF")
    assert "JPY" in section(summary, CONSTRAINTS)


def test_a_subject_fragment_read_as_a_rule_by_a_word_still_names_the_subject() -> None:
    summary = summarize(
        _said("Keep PRs under 89 changed lines.", "Oh, the PR size limit. That's 88 now.")
    )
    assert not _current(summary, "89 changed lines")
    assert "That's 88 now" in section(summary, CONSTRAINTS)


def test_an_update_setting_aside_a_value_two_items_state_replaces_the_one_about_its_subject() -> (
    None
):
    summary = summarize(
        _said(
            "Keep your hands off the bootloader at data/lumen_69/; bricked devices are no fun.",
            "Model checkpoints are written to data/lumen_69/ every epoch.",
            "Ignore the data/lumen_69/ I gave you; the folder for saved weights is data/amber_24/.",
        )
    )
    assert _current(summary, "bootloader at data/lumen_69/")
    assert not _current(summary, "checkpoints are written to data/lumen_69/")
