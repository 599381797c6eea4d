"""Searching a session's transcript (SPEC §17), folded entries included: what a summary
left out is still found, with where it is and whether the context still holds it."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.errors import CompactorError
from app.engine.search import MatchMode, SearchQueryError, parse_query
from app.services.sessions.errors import SessionNotFoundError
from app.services.sessions.transactions import SessionStore

MAX_SEARCH_LIMIT = 100


class InvalidSearchQueryError(CompactorError):
    """The search query cannot be searched (unbalanced quote, nothing to search, too long)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching entry: its sequence number, role, a snippet with the matched words
    marked, whether compaction folded it away, and its rank (1 = best)."""

    seq: int
    role: str
    snippet: str
    folded: bool
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: list[SearchHit]
    # "all": every word matched; "any": none matched every word, so any word was enough.
    match: MatchMode


class TranscriptSearch:
    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def search(
        self, tenant: str, session_id: str, q: str, limit: int = 10, folded_only: bool = False
    ) -> SearchResult:
        """Entries of the tenant's session matching `q`, best first; when every word
        matches nowhere together, entries matching any of them."""
        try:
            query = parse_query(q)
        except SearchQueryError as exc:
            raise InvalidSearchQueryError(str(exc)) from exc
        limit = max(1, min(limit, MAX_SEARCH_LIMIT))
        with self._store.transaction() as tx:
            scope = tx.search.scope(session_id, tenant)
            if scope is None:
                raise SessionNotFoundError(f"session {session_id} not found")
            first_kept, prefix = scope.first_kept_seq, scope.system_prefix_count
            if folded_only and first_kept <= prefix:
                return SearchResult([], query.mode)
            max_seq = first_kept if folded_only else None
            # The leading system entries are never folded: asked for folded only, they
            # are dropped after the query, so ask for that many more.
            wanted = limit + (prefix if folded_only else 0)
            rows = tx.search.search(session_id, query, wanted, max_seq)
            mode = query.mode
            if not rows and (loose := query.loosened()) is not None:
                rows = tx.search.search(session_id, loose, wanted, max_seq)
                mode = loose.mode
        hits: list[SearchHit] = []
        for row in rows:
            folded = prefix <= row.seq < first_kept
            if folded_only and not folded:
                continue
            hits.append(
                SearchHit(
                    seq=row.seq,
                    role=row.role,
                    snippet=row.snippet,
                    folded=folded,
                    rank=len(hits) + 1,
                    score=row.score,
                )
            )
        return SearchResult(hits[:limit], mode)
