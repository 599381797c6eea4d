"""Search snippets: the words around the query's words, marked as the index matched them."""

from __future__ import annotations

import Stemmer as PyStemmer

from app.engine.search import SearchQuery, parse_query
from app.engine.search_snippets import Snippets, Stemmer

ENGLISH = PyStemmer.Stemmer("english").stemWord
PORTER = PyStemmer.Stemmer("porter").stemWord


def snippet(text: str, query: SearchQuery, stem: Stemmer) -> str:
    return Snippets(query, stem).of(text)


def test_a_stemmed_form_of_the_query_word_is_marked() -> None:
    text = "We deployed the staging build yesterday and it worked."
    assert snippet(text, parse_query("deploying"), ENGLISH) == (
        "We **deployed** the staging build yesterday and it worked."
    )
    assert "**deployed**" in snippet(text, parse_query("deploying"), PORTER)


def test_the_window_is_where_the_most_query_words_meet() -> None:
    filler = " ".join(f"word{i}" for i in range(300))
    text = f"alpha once here. {filler} then alpha and beta together at last. {filler}"
    shown = snippet(text, parse_query("alpha beta"), ENGLISH)
    assert "**alpha** and **beta** together" in shown
    assert shown.startswith("…") and shown.endswith("…")
    assert len(shown.replace("…", "").split()) <= 24


def test_a_prefix_term_marks_every_word_it_starts() -> None:
    shown = snippet("the config and configuration files", parse_query("config*"), ENGLISH)
    assert shown == "the **config** and **configuration** files"


def test_a_phrase_marks_its_words_and_excluded_words_are_not_marked() -> None:
    shown = snippet("import json then read the file", parse_query('"import json" -file'), PORTER)
    assert shown == "**import** **json** then read the file"


def test_a_match_deep_in_a_megabyte_output_is_shown() -> None:
    text = "x " * 500_000 + "the marmalade recipe is here"
    shown = snippet(text, parse_query("marmalade"), ENGLISH)
    assert "**marmalade** recipe" in shown and shown.startswith("…")


def test_no_matching_word_shows_the_opening_words() -> None:
    text = " ".join(f"w{i}" for i in range(40))
    assert (
        snippet(text, parse_query("absent"), ENGLISH) == " ".join(f"w{i}" for i in range(24)) + " …"
    )


def test_a_long_run_of_punctuation_between_words_is_shortened() -> None:
    shown = snippet("before " + "-" * 80 + " error after", parse_query("error"), ENGLISH)
    assert shown.startswith("before ---") and "**error** after" in shown
    assert len(shown) < 40


def test_case_is_kept_and_matched_regardless() -> None:
    assert (
        snippet("See README.md first", parse_query("readme"), PORTER) == "See **README**.md first"
    )


def test_a_text_whose_lower_case_is_longer_is_still_marked_in_place() -> None:
    """ "İ" lower-cases to two characters: offsets in the lower-cased text would drift."""
    shown = snippet("İstanbul office: we deployed there", parse_query("deploy"), ENGLISH)
    assert shown == "İstanbul office: we **deployed** there"


def test_a_word_is_found_wherever_the_text_is_cut_to_be_lower_cased() -> None:
    """A long hit is lower-cased a piece at a time (4,096 characters, then twice as many
    each time): a query word across a cut, or just after one, is found and marked, and a
    word that only ends with the query's letters is not."""
    for cut in (4096, 4096 + 8192):
        for offset in range(cut - 9, cut + 3):
            for before, marked in ((" ", True), ("x", False)):
                head = "." * (offset - 1) + before
                text = f"{head}Deployed here. " + "filler " * 3000
                assert text.index("Deployed") == offset
                shown = snippet(text, parse_query("deploy"), ENGLISH)
                assert ("**Deployed**" in shown) is marked, (offset, before)


def test_a_longer_lower_case_far_into_a_long_text_still_marks_in_place() -> None:
    """An "İ" found only after the first pieces were read: the whole text is read again
    the way that keeps offsets, and the snippet is the same as for a short text."""
    text = "alpha once here. " + "filler " * 2000 + "İstanbul: alpha and beta together."
    shown = snippet(text, parse_query("alpha beta"), ENGLISH)
    assert "**alpha** and **beta** together" in shown
