"""POST /context/system over HTTP, with agent-supplied files and in workspace mode."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services.workspace import MAX_FILE_BYTES
from app.settings import Settings


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """root/ (the allowed workspace) with rules files around a project, plus outside/."""
    root = tmp_path / "root"
    files = {
        "root/AGENTS.md": "root rules",
        "root/proj/CLAUDE.md": "project rules",
        "root/proj/sub/AGENTS.md": "below cwd",
        "root/other/AGENTS.md": "sibling",
        "root/.ink/AGENTS.md": "global rules",
        "root/.ink/SYSTEM.md": "global body",
        "root/proj/.ink/SYSTEM.md": "project body",
        "AGENTS.md": "above the root",
        "outside/secret.md": "SECRET",
    }
    for relative, content in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def client_for(tmp_path: Path, roots: str | None) -> TestClient:
    settings = Settings(database_url=f"sqlite:///{tmp_path}/db.sqlite", workspace_roots=roots)
    return TestClient(create_app(settings))


@pytest.fixture
def workspace(tree: Path, tmp_path: Path) -> Iterator[TestClient]:
    with client_for(tmp_path, str(tree)) as client:
        yield client


def post(client: TestClient, **body: Any) -> Any:
    return client.post("/context/system", json=body)


def assert_problem(response: Any, status: int, slug: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status
    assert problem["type"].endswith(f"/{slug}")


def test_workspace_mode_reads_rules_files_from_disk(workspace: TestClient, tree: Path) -> None:
    response = post(workspace, cwd=f"{tree}/proj", global_dir=f"{tree}/.ink")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [(s["kind"], s["path"]) for s in answer["sources"]] == [
        ("system_md", f"{tree}/.ink/SYSTEM.md"),
        ("rules", f"{tree}/.ink/AGENTS.md"),
        ("rules", f"{tree}/AGENTS.md"),
        ("rules", f"{tree}/proj/CLAUDE.md"),
    ]
    system = answer["system"]
    assert system.startswith(f"global body\n\nCurrent working directory: {tree}/proj\n\n")
    for absent in ("below cwd", "sibling", "above the root", "project body", "SECRET"):
        assert absent not in system
    assert answer["tokens"] > sum(s["tokens"] for s in answer["sources"]) // 2
    assert answer["encoding"] == "o200k_base"


def test_workspace_mode_uses_trusted_project_system_md(workspace: TestClient, tree: Path) -> None:
    answer = post(
        workspace,
        cwd=f"{tree}/proj",
        global_dir=f"{tree}/.ink",
        project_dir=f"{tree}/proj/.ink",
        trusted=True,
    ).json()
    assert answer["system"].startswith("project body\n\n")


def test_symlink_leaving_the_root_is_refused(workspace: TestClient, tree: Path) -> None:
    (tree / "proj" / "AGENTS.md").symlink_to(tree.parent / "outside" / "secret.md")
    response = post(workspace, cwd=f"{tree}/proj")
    assert_problem(response, 403, "workspace-access-denied")
    assert "SECRET" not in response.text


def test_symlinked_directory_leaving_the_root_is_refused(workspace: TestClient, tree: Path) -> None:
    (tree / "escape").symlink_to(tree.parent / "outside", target_is_directory=True)
    assert_problem(post(workspace, cwd=f"{tree}/escape"), 403, "workspace-access-denied")


def test_symlink_inside_the_root_is_followed(workspace: TestClient, tree: Path) -> None:
    (tree / "shared.md").write_text("shared rules")
    (tree / "proj" / "AGENTS.md").symlink_to(tree / "shared.md")
    answer = post(workspace, cwd=f"{tree}/proj").json()
    assert "shared rules" in answer["system"]
    assert "project rules" not in answer["system"]  # AGENTS.md outranks CLAUDE.md


def test_dot_dot_path_is_refused(workspace: TestClient, tree: Path) -> None:
    response = post(workspace, cwd=f"{tree}/proj/../../outside")
    assert_problem(response, 403, "workspace-access-denied")
    assert "'..'" in response.json()["detail"]


def test_dot_dot_staying_inside_is_still_refused(workspace: TestClient, tree: Path) -> None:
    assert_problem(post(workspace, cwd=f"{tree}/other/../proj"), 403, "workspace-access-denied")


def test_cwd_outside_the_roots_is_refused(workspace: TestClient, tree: Path) -> None:
    response = post(workspace, cwd=str(tree.parent / "outside"))
    assert_problem(response, 403, "workspace-access-denied")
    assert "outside every allowed workspace root" in response.json()["detail"]


def test_root_name_prefix_is_not_inside_it(workspace: TestClient, tree: Path) -> None:
    sibling = tree.parent / "root-evil"
    sibling.mkdir()
    assert_problem(post(workspace, cwd=str(sibling)), 403, "workspace-access-denied")


def test_global_dir_outside_the_roots_is_refused(workspace: TestClient, tree: Path) -> None:
    response = post(workspace, cwd=f"{tree}/proj", global_dir=str(tree.parent / "outside"))
    assert_problem(response, 403, "workspace-access-denied")


def test_relative_cwd_is_422(workspace: TestClient) -> None:
    response = post(workspace, cwd="proj/sub")
    assert_problem(response, 422, "invalid-system-prompt")
    assert response.json()["detail"].startswith("cwd: ")


def test_relative_file_path_is_422(workspace: TestClient) -> None:
    response = post(workspace, cwd="/r", files=[{"path": "AGENTS.md", "content": "x"}])
    assert_problem(response, 422, "invalid-system-prompt")


def test_unknown_field_is_422(workspace: TestClient) -> None:
    assert_problem(post(workspace, cwd="/r", read_tools=True), 422, "invalid-request")


def test_given_files_are_used_instead_of_the_disk(workspace: TestClient, tree: Path) -> None:
    files = [{"path": f"{tree}/proj/AGENTS.md", "content": "from the agent"}]
    answer = post(workspace, cwd=f"{tree}/proj", files=files, base_prompt="Base.").json()
    assert answer["system"].endswith(
        f'path="{tree}/proj/AGENTS.md">\nfrom the agent\n</project_instructions>\n\n'
        "</project_context>"
    )
    assert "root rules" not in answer["system"]


def test_without_roots_omitted_files_mean_none(tree: Path, tmp_path: Path) -> None:
    with client_for(tmp_path, None) as client:
        answer = post(client, cwd=f"{tree}/proj", base_prompt="Base.").json()
    assert answer["system"] == f"Base.\n\nCurrent working directory: {tree}/proj"
    assert [s["kind"] for s in answer["sources"]] == ["base"]


def test_large_file_is_truncated_and_says_so(workspace: TestClient, tree: Path) -> None:
    (tree / "proj" / "AGENTS.md").write_bytes(b"a" * (MAX_FILE_BYTES + 10))
    answer = post(workspace, cwd=f"{tree}/proj", model="gpt-4", tokenizer="chars/4").json()
    rules = [s for s in answer["sources"] if s["path"] == f"{tree}/proj/AGENTS.md"]
    assert rules[0]["truncated"] is True
    assert f"only the first {MAX_FILE_BYTES} bytes" in answer["system"]
    assert "a" * (MAX_FILE_BYTES + 1) not in answer["system"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_named_like_a_rules_file_is_absent(workspace: TestClient, tree: Path) -> None:
    os.mkfifo(tree / "proj" / "AGENTS.md")
    answer = post(workspace, cwd=f"{tree}/proj").json()
    assert f"{tree}/proj/CLAUDE.md" in [s["path"] for s in answer["sources"]]


def test_a_directory_named_like_a_rules_file_is_absent(workspace: TestClient, tree: Path) -> None:
    # Used to answer 500 (IsADirectoryError); issue 11.
    (tree / "proj" / "AGENTS.md").mkdir()
    response = post(workspace, cwd=f"{tree}/proj")
    assert response.status_code == 200, response.text
    assert f"{tree}/proj/CLAUDE.md" in [s["path"] for s in response.json()["sources"]]


def test_model_chooses_the_tokenizer(workspace: TestClient) -> None:
    body = {"cwd": "/r", "files": [], "skills": [{"name": "s", "description": "d", "path": "/p"}]}
    answer = workspace.post("/context/system", json={**body, "model": "gpt-4"}).json()
    assert answer["encoding"] == "cl100k_base"
    default = workspace.post("/context/system", json=body).json()
    assert default["encoding"] == "o200k_base"
    heuristic = workspace.post("/context/system", json={**body, "tokenizer": "chars/4"}).json()
    assert heuristic["tokens"] == -(-len(heuristic["system"]) // 4)


def test_openapi_declares_the_problem_statuses(workspace: TestClient) -> None:
    operation = workspace.get("/openapi.json").json()["paths"]["/context/system"]["post"]
    assert {"200", "403", "422"} <= set(operation["responses"])
