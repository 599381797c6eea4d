"""Reading prompt and rules files from a workspace the service shares with the agent.

Only inside the configured roots (`COMPACTOR_WORKSPACE_ROOTS`): a `..` segment, a path
outside every root, or a symlink whose target leaves its root is refused, never followed.
A file is opened along its resolved path one component at a time from the root's
descriptor, none of them through a symlink, so a directory swapped for a symlink after
the check cannot lead out either.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.errors import CompactorError
from app.engine.system_prompt import CandidateFile, candidate_paths, normalize_absolute

MAX_FILE_BYTES = 1024 * 1024


class WorkspaceAccessError(CompactorError):
    """A path is outside the allowed workspace roots, uses `..`, or escapes by a symlink."""


def parse_workspace_roots(value: str | None) -> tuple[str, ...]:
    """The comma-separated roots of the setting, normalized; empty when unset."""
    roots = [part.strip() for part in (value or "").split(",") if part.strip()]
    for root in roots:
        if not root.startswith("/"):
            raise ValueError(f"workspace root {root!r} is not an absolute path")
    return tuple(dict.fromkeys(normalize_absolute(root, "workspace root") for root in roots))


# Each directory below the root is opened from its parent's descriptor and never through
# a symlink: one swapped in after the realpath check fails to open instead of leading out.
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NOFOLLOW: the file itself is no symlink either; O_NONBLOCK: a FIFO named like a rules
# file must not hang the request.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def is_inside(path: str, root: str) -> bool:
    """Whether normalized `path` is `root` or lies below it."""
    return root == "/" or path == root or path.startswith(root + "/")


@dataclass(frozen=True, slots=True)
class _Root:
    path: str
    real: str


class WorkspaceReader:
    """Reads the candidate files of a system prompt request from the allowed roots."""

    def __init__(self, roots: Sequence[str], max_file_bytes: int = MAX_FILE_BYTES) -> None:
        # Roots may themselves be symlinks (/tmp on some systems); compare real to real.
        self._roots = tuple(_Root(root, os.path.realpath(root)) for root in roots)
        self._max_file_bytes = max_file_bytes

    @property
    def configured(self) -> bool:
        return bool(self._roots)

    def read_candidates(
        self, cwd: str, global_dir: str | None, project_dir: str | None, trusted: bool
    ) -> tuple[CandidateFile, ...]:
        """The candidate files that exist; directories above a root are skipped."""
        named = [("cwd", cwd), ("global_dir", global_dir)]
        if trusted:
            named.append(("project_dir", project_dir))
        for where, raw in named:
            if raw is not None:
                self._check_named(raw, where)
        found: list[CandidateFile] = []
        for path in candidate_paths(cwd, global_dir, project_dir, trusted):
            roots = self._roots_holding(path)
            if roots:
                read = self._read(path, roots)
                if read is not None:
                    found.append(read)
        return tuple(found)

    def _roots_holding(self, path: str) -> list[_Root]:
        return [root for root in self._roots if is_inside(path, root.path)]

    def _check_named(self, raw: str, where: str) -> None:
        normalize_absolute(raw, where)  # a relative path is a payload error, not a refusal
        if ".." in raw.split("/"):
            raise WorkspaceAccessError(
                f"{where}: {raw!r} contains a '..' segment; send the path without '..'"
            )
        path = normalize_absolute(raw, where)
        roots = self._roots_holding(path)
        if not roots:
            raise WorkspaceAccessError(
                f"{where}: {path!r} is outside every allowed workspace root "
                "(COMPACTOR_WORKSPACE_ROOTS)"
            )
        self._resolve_within(path, roots, where)

    def _resolve_within(self, path: str, roots: list[_Root], where: str) -> str:
        """The real path of `path`, which must stay inside one of `roots`."""
        real = os.path.realpath(path)
        if not any(is_inside(real, root.real) for root in roots):
            raise WorkspaceAccessError(
                f"{where}: {path!r} goes through a symlink that leaves its workspace root"
            )
        return real

    def _read(self, path: str, roots: list[_Root]) -> CandidateFile | None:
        real = self._resolve_within(path, roots, "file")
        root = max((r for r in roots if is_inside(real, r.real)), key=lambda r: len(r.real))
        fd = self._open_below(root.real, real, path)
        if fd is None:
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            # A directory (or a device) named like a rules file is not a rules file; opening
            # it as a file object would raise IsADirectoryError.
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(self._max_file_bytes + 1)
        truncated = len(data) > self._max_file_bytes
        # final=False drops a multi-byte character cut in half at the size bound.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(data[: self._max_file_bytes], final=not truncated)
        if truncated:
            text += (
                f"\n\n[truncated: only the first {self._max_file_bytes} bytes of this file "
                "were read]"
            )
        return CandidateFile(path=path, content=text, truncated=truncated)

    def _open_below(self, root: str, real: str, path: str) -> int | None:
        """`real` (a resolved path below `root`) opened one component at a time from the
        root's descriptor (openat); None when it is not there. A component that is a
        symlink now was swapped in after the check: refused."""
        parts = [part for part in real[len(root) :].split("/") if part]
        if not parts:
            return None  # the root itself is a directory, not a file
        try:
            current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            for index, part in enumerate(parts):
                last = index == len(parts) - 1
                try:
                    opened = os.open(
                        part, _FILE_FLAGS if last else _DIRECTORY_FLAGS, dir_fd=current
                    )
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _swapped(part, current):
                        raise WorkspaceAccessError(
                            f"file: {path!r} goes through a symlink that was swapped in "
                            "after it was checked; refused, not followed"
                        ) from exc
                    return None  # missing or unreadable files are simply absent
                if last:
                    return opened
                os.close(current)
                current = opened
        finally:
            os.close(current)
        return None


def _swapped(name: str, dir_fd: int) -> bool:
    """After ELOOP/ENOTDIR opening `name`: True unless it is a plain non-directory (a file
    where the path expected a directory: the file asked for is just not there). A symlink,
    or a directory again by now (one swapped back), is an attack."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except OSError:
        return False
    return stat.S_ISLNK(mode) or stat.S_ISDIR(mode)
