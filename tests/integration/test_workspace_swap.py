"""A directory swapped for a symlink after the path was checked cannot lead the reader out
of its workspace root (issue 21.8): the file is opened one component at a time from the
root's descriptor, and a component that became a symlink is refused, never followed.

The attacker's timing is made certain instead of raced for: the swap is made at each
`os.open` the reader does in turn (and undone right after it, as a process toggling the
directory would), so every moment between a check and an open is tried once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from app.services.workspace import WorkspaceAccessError, WorkspaceReader

SECRET = "SECRET outside the root"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "proj" / "sub").mkdir(parents=True)
    (root / "proj" / "AGENTS.md").write_text("project rules")
    (root / "proj" / "sub" / "AGENTS.md").write_text("sub rules")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    for name in ("AGENTS.override.md", "AGENTS.md", "CLAUDE.md"):
        (outside / name).write_text(SECRET)
        (outside / "sub" / name).write_text(SECRET)
    return root


def _swap(directory: Path, target: Path) -> None:
    directory.rename(directory.with_name(directory.name + "-moved"))
    directory.symlink_to(target, target_is_directory=True)


def _unswap(directory: Path) -> None:
    directory.unlink()
    directory.with_name(directory.name + "-moved").rename(directory)


@contextmanager
def _swapped_during_open(
    monkeypatch: pytest.MonkeyPatch, call: int, directory: Path, target: Path, undo: bool
) -> Iterator[list[int]]:
    """Counts the reader's `os.open` calls; during call number `call`, `directory` is a
    symlink to `target` (swapped back after it when `undo`)."""
    real_open = os.open
    calls = [0]
    swapped = False

    def open_with_swap(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        nonlocal swapped
        index = calls[0]
        calls[0] += 1
        if index != call:
            return real_open(path, flags, *args, **kwargs)
        _swap(directory, target)
        swapped = True
        try:
            return real_open(path, flags, *args, **kwargs)
        finally:
            if undo:
                _unswap(directory)
                swapped = False

    monkeypatch.setattr(os, "open", open_with_swap)
    try:
        yield calls
    finally:
        monkeypatch.setattr(os, "open", real_open)
        if swapped:
            _unswap(directory)


def _read(reader: WorkspaceReader, cwd: Path) -> list[str] | None:
    """The contents read, or None when the reader refused."""
    try:
        return [f.content for f in reader.read_candidates(str(cwd), None, None, False)]
    except WorkspaceAccessError:
        return None


@pytest.mark.parametrize("undo", [True, False], ids=["toggled", "left-swapped"])
@pytest.mark.parametrize("depth", ["proj", "proj/sub"])
def test_a_directory_swapped_for_a_symlink_never_leads_outside(
    tree: Path, monkeypatch: pytest.MonkeyPatch, undo: bool, depth: str
) -> None:
    reader = WorkspaceReader([str(tree)])
    cwd = tree / "proj" / "sub"
    genuine = _read(reader, cwd)
    assert genuine == ["project rules", "sub rules"]
    with _swapped_during_open(monkeypatch, -1, tree, tree, undo) as counted:
        _read(reader, cwd)
    # proj → outside/, proj/sub → outside/sub/: the same files, with the secret in them.
    target = tree.parent / "outside" / Path(depth).relative_to("proj")
    outcomes = []
    for call in range(counted[0]):
        with _swapped_during_open(monkeypatch, call, tree / depth, target, undo):
            outcome = _read(reader, cwd)
        assert outcome is None or SECRET not in outcome, (call, outcome)
        outcomes.append(outcome)
    # Some moments met the symlink itself: refused, not skipped.
    assert None in outcomes, outcomes
    assert _read(reader, cwd) == genuine


def test_a_symlink_root_and_a_symlink_inside_the_root_still_work(tmp_path: Path) -> None:
    real_root = tmp_path / "real-root"
    (real_root / "proj").mkdir(parents=True)
    (real_root / "shared.md").write_text("shared rules")
    (real_root / "proj" / "AGENTS.md").symlink_to(real_root / "shared.md")
    (tmp_path / "root-link").symlink_to(real_root, target_is_directory=True)
    reader = WorkspaceReader([str(tmp_path / "root-link")])
    found = reader.read_candidates(str(tmp_path / "root-link" / "proj"), None, None, False)
    assert [f.content for f in found] == ["shared rules"]
