"""Domain errors. They carry no HTTP meaning; the API layer maps each class to one
problem type (status, title, slug) in one table, `app.api.problems.PROBLEM_TYPES`, and a
test fails when a subclass of `CompactorError` anywhere in `app` is missing from it.

The whole tree (engine errors here; the services add theirs beside their use cases):

    CompactorError
    ├── InvalidHistoryError            the history is invalid in its wire format
    ├── InvalidSystemPromptError       (engine.system_prompt) a bad assembly request
    ├── IdempotencyMismatchError       (services.sessions) a key reused with another body
    ├── WorkspaceAccessError           (services.workspace) a path outside the roots
    ├── SessionNotFoundError           (services.sessions) no such session for the tenant
    ├── NothingToCompactError          nothing lies before the cut point
    ├── IneffectiveCompactionError     the summary would not make the history smaller
    ├── CompactionConflictError        (services.sessions) another compaction won the race
    ├── StoreUnavailableError          (services.sessions) the database cannot be reached
    ├── SummarizerError                the summarizer gave no usable summary
    │   ├── SummaryTruncatedError      hit the output limit, the retry did not help
    │   ├── EmptySummaryError          answered with no text
    │   ├── SummarizerRejectedError    the provider refused the request or answered nonsense
    │   ├── SummarizerUnavailableError unreachable, or transient failures past the retries
    │   └── SummarizerTimeoutError     no answer within the deadline
    ├── UpstreamError                  the proxied model API gave no answer
    │   ├── UpstreamUnavailableError   unreachable, or closed mid-answer
    │   └── UpstreamTimeoutError       no answer within the configured timeout
    ├── UpstreamNotConfiguredError     (services.proxy) the route's upstream has no URL
    ├── InvalidContextManagementError  a vendor context_management field is wrong
    ├── CompactionStateError           a compaction block/item's state is refused
    ├── CompactionRequestError         an on-demand compaction refused, with the vendor's code
    └── CallerGoneError                the caller disconnected; the work was abandoned

Configuration problems found at start-up (`SummarizerConfigError`, `RanksFileError`, …)
are not request errors: they stop the process with one clear line and are not mapped.
"""

from __future__ import annotations


class CompactorError(Exception):
    """Base class of every error the engine and services raise on purpose."""


class InvalidHistoryError(CompactorError):
    """The request's history is not valid in its wire format; `where` points at the spot."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


class NothingToCompactError(CompactorError):
    """There is no message before the cut point to fold into a summary."""


class IneffectiveCompactionError(CompactorError):
    """The compacted history would be no smaller than the original; nothing was kept."""

    def __init__(self, message: str, *, tokens_before: int, tokens_after: int) -> None:
        super().__init__(message)
        self.tokens_before = tokens_before
        self.tokens_after = tokens_after


class SummarizerError(CompactorError):
    """The summarizer could not produce a usable summary."""

    def __init__(self, message: str, *, provider: str = "", model: str = "") -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model


class SummaryTruncatedError(SummarizerError):
    """The summary hit the output limit, and the retry rule did not rescue it."""


class EmptySummaryError(SummarizerError):
    """The summarizer answered with no text."""


class SummarizerRejectedError(SummarizerError):
    """The provider rejected the request (4xx other than 429) or answered nonsense."""


class SummarizerUnavailableError(SummarizerError):
    """The provider could not be reached, or kept failing transiently past the retries."""


class SummarizerTimeoutError(SummarizerError):
    """The provider did not answer within the deadline."""


class CallerGoneError(CompactorError):
    """The caller disconnected; the work was abandoned and nothing was kept."""


class InvalidContextManagementError(CompactorError):
    """A vendor-native context-management request the service cannot honour: an unknown
    edit type, a malformed field, or server-side state the service cannot see."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


class CompactionStateError(CompactorError):
    """A compaction block or item whose state this service did not write, or that was
    altered after it was written."""


class CompactionRequestError(CompactorError):
    """An on-demand compaction request (or a later request carrying its block) the
    vendor would refuse: `code` is the vendor's error code (`compaction_block_misplaced`,
    `compaction_signature_invalid`, …), which the vendors' SDKs branch on."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class UpstreamError(CompactorError):
    """The upstream model API could not be reached or did not answer in time."""


class UpstreamUnavailableError(UpstreamError):
    """Connecting to the upstream failed, or it closed the connection mid-answer."""


class UpstreamTimeoutError(UpstreamError):
    """The upstream did not answer within the configured timeout."""
