"""Full-text search of transcript entries: SQLite FTS5 on the embedded store, PostgreSQL
full-text search in production — a stored, generated `tsvector` column with a GIN index
(`0012`; an expression index before it, `0009`). The index objects belong to the
migrations, not to the models: `SEARCH_INDEX_OBJECTS` and `PG_VECTOR_COLUMN` name them so
schema comparison leaves them alone.

Queries arrive parsed (`app.engine.search.SearchQuery`) and are rendered here with every
word quoted or bound as a parameter, so no user text is ever read as search syntax by
the database: what the database is given always parses. The database ranks; the
snippets of the hits shown are made in Python (`app.engine.search_snippets`), which is
much cheaper than the databases' highlighters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import Stemmer
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from app.engine.search import MatchMode, SearchQuery, SearchTerm
from app.engine.search_snippets import Snippets
from app.store.models import CompactionRow, SessionRow

FTS_TABLE = "transcript_search"
PG_INDEX = "ix_transcript_entries_search"
# The stored tsvector (PostgreSQL only): matching and ranking read it instead of parsing
# each candidate's text again — with the expression index, ranking re-ran to_tsvector on
# every hit, and a query over a 10,000-entry session took seconds (bench/store.py).
PG_VECTOR_COLUMN = "search_vector"
# The role a message says it has (a Responses item: its type), stored (PostgreSQL only,
# `0013`): reading it from the message parsed the whole JSON of each hit.
PG_ROLE_COLUMN = "search_role"
_PG_ROLE = "coalesce(message ->> 'role', message ->> 'type')"


def outside_the_models(obj: object, name: str | None, type_: str, *_: object) -> bool:
    """Alembic's `include_object`: False for the search index, which the migration
    creates with raw SQL (FTS5 and its shadow tables, the GIN expression index), so
    comparing the models with the database does not ask to drop it."""
    if name is None:
        return True
    if type_ == "table" and (name == FTS_TABLE or name.startswith(FTS_TABLE + "_")):
        return False
    if type_ == "column" and name in (PG_VECTOR_COLUMN, PG_ROLE_COLUMN):
        return False
    return not (type_ == "index" and name == PG_INDEX)


PG_CONFIG = "english"
# The stemmers of the two indexes (FTS5's `porter` tokenizer; PostgreSQL's `english`
# configuration is Snowball's English): snippets mark the words the index matched.
SQLITE_STEMMER, PG_STEMMER = "porter", "english"
# What a snippet puts around a matched word.
HIGHLIGHT_START, HIGHLIGHT_END = "**", "**"

# Everything the search migration creates outside the models (FTS5's shadow tables too).
SEARCH_INDEX_OBJECTS = frozenset(
    {
        FTS_TABLE,
        *(f"{FTS_TABLE}_{suffix}" for suffix in ("data", "idx", "content", "docsize", "config")),
        PG_INDEX,
    }
)


@dataclass(frozen=True, slots=True)
class SearchRow:
    """One matching entry, best first: its sequence number, the role its message says
    it has (a Responses item: its type), snippet and score (higher is better on every
    backend)."""

    seq: int
    role: str
    snippet: str
    score: float


@dataclass(frozen=True, slots=True)
class SearchScope:
    """What a search needs of its session: how many leading system entries it has (never
    folded) and where the context's kept entries start (0: nothing folded yet)."""

    system_prefix_count: int
    first_kept_seq: int


# --- SQLite FTS5 ------------------------------------------------------------------


def sqlite_create_statements() -> list[str]:
    """The FTS5 index over `transcript_entries.search_text` and the triggers keeping it."""
    return [
        f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(search_text, "
        "content='transcript_entries', content_rowid='id', tokenize='porter unicode61')",
        f"CREATE TRIGGER {FTS_TABLE}_ai AFTER INSERT ON transcript_entries BEGIN "
        f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END",
        f"CREATE TRIGGER {FTS_TABLE}_ad AFTER DELETE ON transcript_entries BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) "
        "VALUES ('delete', old.id, old.search_text); END",
        f"CREATE TRIGGER {FTS_TABLE}_au AFTER UPDATE OF search_text ON transcript_entries BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) "
        "VALUES ('delete', old.id, old.search_text); "
        f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END",
    ]


def sqlite_drop_statements() -> list[str]:
    return [
        *(f"DROP TRIGGER IF EXISTS {FTS_TABLE}_{t}" for t in ("ai", "ad", "au")),
        f"DROP TABLE IF EXISTS {FTS_TABLE}",
    ]


def sqlite_rebuild_statement() -> str:
    return f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')"


def _fts_term(term: SearchTerm) -> str:
    # Each word in double quotes: FTS5 then reads it as a string, never as an operator.
    quoted = " ".join(f'"{word}"' for word in term.words)
    body = f"{quoted}*" if term.prefix else quoted
    return f"({body})" if term.phrase and not term.prefix else body


def fts5_expression(query: SearchQuery) -> str:
    """The MATCH expression of `query`, every word quoted."""
    clauses = [
        "(" + " OR ".join(_fts_term(t) for t in clause.alternatives) + ")"
        for clause in query.clauses
    ]
    joined = (" AND " if query.mode is MatchMode.ALL else " OR ").join(clauses)
    if query.excluded:
        excluded = " OR ".join(_fts_term(t) for t in query.excluded)
        joined = f"({joined}) NOT ({excluded})"
    return joined


def _sqlite_search(
    db: Session, session_id: str, query: SearchQuery, limit: int, max_seq: int | None
) -> list[SearchRow]:
    below = "AND e.seq < :max_seq" if max_seq is not None else ""
    # Ranked on the index alone; the text and role are read for the `limit` best only.
    sql = text(
        f"WITH hits AS (SELECT e.id, e.seq, bm25({FTS_TABLE}) AS score "
        f"FROM {FTS_TABLE} JOIN transcript_entries AS e ON e.id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH :expression AND e.session_id = :session_id {below} "
        "ORDER BY score, e.seq DESC LIMIT :limit) "
        "SELECT hits.seq, coalesce(json_extract(e.message, '$.role'), "
        "json_extract(e.message, '$.type')), e.search_text, hits.score "
        "FROM hits JOIN transcript_entries AS e ON e.id = hits.id "
        "ORDER BY hits.score, hits.seq DESC"
    )
    params: dict[str, Any] = {
        "expression": fts5_expression(query),
        "session_id": session_id,
        "limit": limit,
        "max_seq": max_seq,
    }
    rows = db.execute(sql, params).all()
    # bm25 is lower-is-better (negative); the API's score is higher-is-better.
    return _rows(rows, query, SQLITE_STEMMER, lambda score: -float(score))


# --- PostgreSQL -------------------------------------------------------------------


def pg_vector_sql(column: str = "search_text") -> str:
    """The indexed expression; a query must use it verbatim for the index to apply.

    Punctuation becomes spaces first: PostgreSQL's parser would otherwise keep
    `deploy/staging.toml` or `a.b@c.d` as one token that no word of a query matches,
    where FTS5 (and a person) sees the words."""
    cleaned = f"regexp_replace(coalesce({column}, ''), '[^\\w\\s]+', ' ', 'g')"
    return f"to_tsvector('{PG_CONFIG}'::regconfig, {cleaned})"


def pg_create_statement() -> str:
    """The expression index of `0009` (and of `0012`'s downgrade)."""
    return f"CREATE INDEX {PG_INDEX} ON transcript_entries USING gin ({pg_vector_sql()})"


def pg_vector_column_statements() -> list[str]:
    """`0012`: the expression index replaced by a stored generated column and its GIN
    index. Adding a generated column computes it for every existing row (the backfill)
    and PostgreSQL keeps it on every insert and update of `search_text`."""
    return [
        pg_drop_statement(),
        f"ALTER TABLE transcript_entries ADD COLUMN {PG_VECTOR_COLUMN} tsvector "
        f"GENERATED ALWAYS AS ({pg_vector_sql()}) STORED",
        f"CREATE INDEX {PG_INDEX} ON transcript_entries USING gin ({PG_VECTOR_COLUMN})",
    ]


def pg_vector_column_drop_statements() -> list[str]:
    return [
        pg_drop_statement(),
        f"ALTER TABLE transcript_entries DROP COLUMN IF EXISTS {PG_VECTOR_COLUMN}",
        pg_create_statement(),
    ]


def pg_reads_less_statements() -> list[str]:
    """`0013`: the GIN index takes each entry when it is written instead of queueing it
    in its pending list (which every query must read, and which made the planner scan
    the session's entries instead), and what is queued already is merged now; an
    entry's role is stored (generated) so a hit's is read without parsing its message."""
    return [
        f"ALTER INDEX {PG_INDEX} SET (fastupdate = off)",
        f"SELECT gin_clean_pending_list('{PG_INDEX}'::regclass)",
        f"ALTER TABLE transcript_entries ADD COLUMN {PG_ROLE_COLUMN} text "
        f"GENERATED ALWAYS AS ({_PG_ROLE}) STORED",
    ]


def pg_reads_less_drop_statements() -> list[str]:
    return [
        f"ALTER TABLE transcript_entries DROP COLUMN IF EXISTS {PG_ROLE_COLUMN}",
        f"ALTER INDEX {PG_INDEX} RESET (fastupdate)",
    ]


def pg_drop_statement() -> str:
    return f"DROP INDEX IF EXISTS {PG_INDEX}"


def _pg_term(term: SearchTerm, name: str, params: dict[str, Any]) -> str:
    if term.prefix:
        # Words are \w+ only (parse_query), so `word:*` is valid tsquery syntax.
        params[name] = " <-> ".join([*term.words[:-1], f"{term.words[-1]}:*"])
        return f"to_tsquery('{PG_CONFIG}'::regconfig, :{name})"
    params[name] = " ".join(term.words)
    return f"phraseto_tsquery('{PG_CONFIG}'::regconfig, :{name})"


def pg_tsqueries(query: SearchQuery, params: dict[str, Any]) -> tuple[str, str]:
    """The tsquery expression of `query` that matches, and the one that ranks (the same
    parameters): without the excluded terms when each of them is one lexeme.

    A matched entry holds no lexeme of an excluded one-lexeme term, so ranking with the
    query or with its included part gives every entry the same score (`!x` is true over
    any cover of an entry without `x`), but `ts_rank_cd` reads each match's positions
    again for the negation: ~2x its time on a broad query with an exclusion
    (bench/store.py --search). A phrase, or a word PostgreSQL's parser splits, may have
    its lexemes in a matched entry apart: those are ranked with the whole query, decided
    in SQL (`numnode` of constants, folded when the query is planned)."""
    counter = iter(range(10_000))

    def term(t: SearchTerm) -> str:
        return _pg_term(t, f"t{next(counter)}", params)

    clauses = ["(" + " || ".join(term(t) for t in c.alternatives) + ")" for c in query.clauses]
    joined = (" && " if query.mode is MatchMode.ALL else " || ").join(clauses)
    if not query.excluded:
        return joined, joined
    excluded = [term(t) for t in query.excluded]
    matching = f"({joined}) && !!({' || '.join(excluded)})"
    one_lexeme_each = " AND ".join(f"numnode({e}) <= 1" for e in excluded)
    ranking = f"CASE WHEN {one_lexeme_each} THEN ({joined}) ELSE {matching} END"
    return matching, ranking


def _pg_search(
    db: Session, session_id: str, query: SearchQuery, limit: int, max_seq: int | None
) -> list[SearchRow]:
    params: dict[str, Any] = {"session_id": session_id, "limit": limit, "max_seq": max_seq}
    tsquery, ranking = pg_tsqueries(query, params)
    below = "AND e.seq < :max_seq" if max_seq is not None else ""
    vector = f"e.{PG_VECTOR_COLUMN}"
    # The query inline (not from a CTE) so the planner sees a constant for the GIN
    # index; the text and role are read for the `limit` best only.
    sql = text(
        f"WITH hits AS (SELECT e.id, e.seq, ts_rank_cd({vector}, {ranking}) AS score "
        "FROM transcript_entries AS e "
        f"WHERE e.session_id = :session_id AND {vector} @@ ({tsquery}) {below} "
        "ORDER BY score DESC, e.seq DESC LIMIT :limit) "
        f"SELECT hits.seq, e.{PG_ROLE_COLUMN}, e.search_text, hits.score "
        "FROM hits JOIN transcript_entries AS e ON e.id = hits.id "
        "ORDER BY hits.score DESC, hits.seq DESC"
    )
    rows = db.execute(sql, params).all()
    return _rows(rows, query, PG_STEMMER, float)


def _rows(
    rows: Sequence[Any], query: SearchQuery, stemmer: str, score: Callable[[Any], float]
) -> list[SearchRow]:
    """Rows of (seq, role, text, score) as SearchRows, each with its snippet. A stemmer
    of its own per search: PyStemmer's objects are not safe to share between threads."""
    snippets = Snippets(
        query, Stemmer.Stemmer(stemmer).stemWord, mark=(HIGHLIGHT_START, HIGHLIGHT_END)
    )
    return [
        SearchRow(
            seq=int(seq),
            role=role if isinstance(role, str) else "unknown",
            snippet=snippets.of(found or ""),
            score=score(value),
        )
        for seq, role, found, value in rows
    ]


class SearchRepository:
    """Searches one session's entries, ranked; only the backend's own index is used."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def scope(self, session_id: str, tenant: str) -> SearchScope | None:
        """The tenant's session as a search sees it (None: no such session of the
        tenant's), in one query: loading the session and its newest compaction record
        as objects was most of a search that found little (py-spy, bench/store.py)."""
        newest = (
            select(CompactionRow.first_kept_seq)
            .where(CompactionRow.session_id == SessionRow.id)
            .order_by(CompactionRow.ordinal.desc())
            .limit(1)
            .scalar_subquery()
        )
        found = self.db.execute(
            select(SessionRow.system_prefix_count, newest).where(
                SessionRow.id == session_id, SessionRow.tenant == tenant
            )
        ).first()
        if found is None:
            return None
        prefix, first_kept = found
        return SearchScope(int(prefix or 0), int(first_kept or 0))

    def search(
        self, session_id: str, query: SearchQuery, limit: int, max_seq: int | None = None
    ) -> list[SearchRow]:
        """Entries of `session_id` matching `query`, best first, at most `limit` (with
        `max_seq`, only entries before it)."""
        if self.db.get_bind().dialect.name == "postgresql":
            return _pg_search(self.db, session_id, query, limit, max_seq)
        return _sqlite_search(self.db, session_id, query, limit, max_seq)
