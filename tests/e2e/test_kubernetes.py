"""deploy/kubernetes: every object validates against the Kubernetes schemas (offline, with
the schemas kubernetes-validate ships; strict, so a misspelled field is an error), the
wiring holds (probe paths are the app's routes, every COMPACTOR_* variable is a setting,
secrets and config maps exist, the image's user is the manifests' user), and the
containers' commands work as the manifests run them: with a read-only root filesystem
and writable emptyDirs only, against PostgreSQL for the Deployment and its Job, SQLite
on an emptyDir for the sidecar."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import kubernetes_validate
import pytest
import yaml

from app import __version__
from app.main import create_app
from app.settings import Settings
from tests.e2e.container import (
    ROOT,
    Container,
    Host,
    _free_port,
    dockerfile_value,
    image_env,
    read_only_root_problem,
    run_to_completion,
    serving,
    with_port,
)

MANIFESTS = ROOT / "deploy" / "kubernetes"
SETTINGS = {f"COMPACTOR_{name.upper()}" for name in Settings.model_fields}
# Native sidecars (restartPolicy on an init container) are on by default from 1.29.
OLDEST = "1.29"
VERSIONS = sorted(
    {
        kubernetes_validate.utils.major_minor(v)
        for v in kubernetes_validate.utils.all_versions()
        if tuple(map(int, v.split(".")[:2])) >= tuple(map(int, OLDEST.split(".")))
    },
    key=lambda v: tuple(map(int, v.split("."))),
)
IMAGE = f"context-compactor:{__version__}"
CONTAINER_PORT = 8000


def load_objects() -> list[tuple[str, dict[str, Any]]]:
    """(file name, object) for every object of every manifest."""
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text("utf-8")):
            if document:
                found.append((path.name, document))
    return found


OBJECTS = load_objects()


def the(kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [o for _, o in OBJECTS if o["kind"] == kind]
    if name is not None:
        matches = [o for o in matches if o["metadata"]["name"] == name]
    assert len(matches) == 1, (kind, name, len(matches))
    return matches[0]


def pod_specs() -> dict[str, dict[str, Any]]:
    """Every pod spec of the manifests, by the kind of its object."""
    return {
        "Deployment": the("Deployment")["spec"]["template"]["spec"],
        "Job": the("Job")["spec"]["template"]["spec"],
        "Pod": the("Pod")["spec"],
    }


def compactor_containers() -> dict[str, dict[str, Any]]:
    found = {}
    for kind, spec in pod_specs().items():
        for container in spec.get("initContainers", []) + spec["containers"]:
            if container["image"].startswith("context-compactor:"):
                found[kind] = container
    assert set(found) == {"Deployment", "Job", "Pod"}
    return found


def validation_errors(document: dict[str, Any], version: str) -> list[str]:
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = ".".join(str(p) for p in error.path)
        return [f"{document['kind']}/{document['metadata']['name']} @{version} {where}: "
                f"{error.message}"]  # fmt: skip
    except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as e:
        return [f"{document['kind']} @{version}: {e.message}"]
    return []


# -- schemas ---------------------------------------------------------------------------------


def test_the_manifests_hold_every_object_the_deployment_needs() -> None:
    kinds = sorted((o["kind"], o["metadata"]["name"]) for _, o in OBJECTS)
    assert kinds == [
        ("ConfigMap", "compactor-config"),
        ("Deployment", "compactor"),
        ("Job", "compactor-migrate"),
        ("Pod", "agent-with-compactor"),
        ("PodDisruptionBudget", "compactor"),
        ("Secret", "compactor-secrets"),
        ("Service", "compactor"),
    ]
    assert {name for name, _ in OBJECTS} >= {"deployment.yaml", "sidecar.yaml"}


def test_every_object_validates_against_the_kubernetes_schemas() -> None:
    assert OLDEST in VERSIONS and len(VERSIONS) >= 2, VERSIONS
    errors = [e for version in VERSIONS for _, o in OBJECTS for e in validation_errors(o, version)]
    assert errors == []


def test_the_validation_fails_on_a_misspelled_field_and_a_wrong_type() -> None:
    deployment = copy.deepcopy(the("Deployment"))
    pod = deployment["spec"]["template"]["spec"]
    pod["securityContext"]["runAsNonroot"] = pod["securityContext"].pop("runAsNonRoot")
    assert validation_errors(deployment, VERSIONS[-1])
    deployment = copy.deepcopy(the("Deployment"))
    deployment["spec"]["replicas"] = "two"
    assert validation_errors(deployment, VERSIONS[-1])
    unknown = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    assert validation_errors(unknown, VERSIONS[-1])


# -- wiring ----------------------------------------------------------------------------------


def _get_routes() -> set[str]:
    app = create_app(Settings(database_url="sqlite:///:memory:"))
    return {path for path, ops in app.openapi()["paths"].items() if "get" in ops}


def _probe_paths(container: dict[str, Any]) -> dict[str, str]:
    paths = {}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        if probe not in container:
            continue
        action = container[probe]
        if "httpGet" in action:
            paths[probe] = action["httpGet"]["path"]
        else:
            (url,) = re.findall(r"https?://[^'\"]+", " ".join(action["exec"]["command"]))
            paths[probe] = urlsplit(url).path
    return paths


def test_probes_ask_the_apps_own_health_routes() -> None:
    routes = _get_routes()
    containers = compactor_containers()
    server = containers["Deployment"]
    assert _probe_paths(server) == {
        "startupProbe": "/healthz",
        "readinessProbe": "/readyz",
        "livenessProbe": "/healthz",
    }
    ports = {p["name"]: p["containerPort"] for p in server["ports"]}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert server[probe]["httpGet"]["port"] in ports
    sidecar = _probe_paths(containers["Pod"])
    assert sidecar == {"startupProbe": "/readyz", "livenessProbe": "/healthz"}
    for paths in (_probe_paths(server), sidecar):
        assert set(paths.values()) <= routes


def test_the_service_and_the_budget_select_the_deployments_pods() -> None:
    labels = the("Deployment")["spec"]["template"]["metadata"]["labels"]
    service = the("Service")["spec"]
    assert service["selector"].items() <= labels.items()
    assert the("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    server = compactor_containers()["Deployment"]
    (port,) = server["ports"]
    assert service["ports"][0]["targetPort"] == port["name"]
    assert port["containerPort"] == CONTAINER_PORT
    assert server["command"][server["command"].index("--port") + 1] == str(CONTAINER_PORT)


def _env_names(container: dict[str, Any]) -> set[str]:
    names = {e["name"] for e in container.get("env", [])}
    for source in container.get("envFrom", []):
        names |= set(the("ConfigMap", source["configMapRef"]["name"])["data"])
    return names


def test_every_compactor_variable_is_a_setting() -> None:
    used: set[str] = set()
    for container in compactor_containers().values():
        used |= {n for n in _env_names(container) if n.startswith("COMPACTOR_")}
    used |= {k for k in the("ConfigMap")["data"] if k.startswith("COMPACTOR_")}
    assert used and used <= SETTINGS, used - SETTINGS
    # The agent container of the sidecar Pod sets no COMPACTOR_* variable (it is not the
    # service: such a name would only mislead).
    (agent,) = the("Pod")["spec"]["containers"]
    assert not {n for n in _env_names(agent) if n.startswith("COMPACTOR_")}


def test_the_secrets_come_from_the_secret_and_every_reference_resolves() -> None:
    secret = the("Secret")
    keys = set(secret["stringData"])
    for kind, container in compactor_containers().items():
        for entry in container.get("env", []):
            ref = entry.get("valueFrom", {}).get("secretKeyRef")
            if ref is not None:
                assert ref["name"] == secret["metadata"]["name"], (kind, entry)
                assert ref["key"] in keys, (kind, entry)
    server = {e["name"]: e for e in compactor_containers()["Deployment"]["env"]}
    for name in ("COMPACTOR_DATABASE_URL", "COMPACTOR_API_KEYS", "COMPACTOR_STATE_KEY"):
        assert "value" not in server[name] and "secretKeyRef" in server[name]["valueFrom"], name
    job = {e["name"]: e for e in compactor_containers()["Job"]["env"]}
    assert job["COMPACTOR_DATABASE_URL"] == server["COMPACTOR_DATABASE_URL"]
    # Replicas never migrate at start: the Job does.
    assert the("ConfigMap")["data"]["COMPACTOR_AUTO_MIGRATE"] == "false"
    assert compactor_containers()["Job"]["command"] == ["compactor", "migrate"]


def test_every_pod_runs_as_the_images_non_root_user_with_a_read_only_root() -> None:
    uid, _, gid = dockerfile_value("USER").partition(":")
    assert int(uid) > 0
    for kind, spec in pod_specs().items():
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True, kind
        assert context["runAsUser"] == int(uid) and context["runAsGroup"] == int(gid), kind
        assert context["seccompProfile"]["type"] == "RuntimeDefault", kind
        assert spec["automountServiceAccountToken"] is False, kind
    for kind, container in compactor_containers().items():
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, kind
        assert security["allowPrivilegeEscalation"] is False, kind
        assert security["capabilities"]["drop"] == ["ALL"], kind
        assert container["image"] == IMAGE, kind
        resources = container["resources"]
        assert resources["requests"]["memory"] and resources["limits"]["memory"], kind
        assert resources["requests"]["cpu"], kind
        volumes = {v["name"]: v for v in pod_specs()[kind]["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        # The only writable places are emptyDirs: /tmp, and the sidecar's SQLite folder.
        assert "/tmp" in mounts, kind
        assert all("emptyDir" in volumes[name] for name in mounts.values()), kind


def test_the_server_listens_beyond_loopback_only_with_keys_and_the_sidecar_on_loopback() -> None:
    containers = compactor_containers()
    server = containers["Deployment"]["command"]
    assert server[server.index("--host") + 1] == "0.0.0.0"
    assert "COMPACTOR_API_KEYS" in _env_names(containers["Deployment"])
    sidecar = containers["Pod"]
    assert sidecar["command"][sidecar["command"].index("--host") + 1] == "127.0.0.1"
    assert sidecar["restartPolicy"] == "Always"  # a native sidecar, started before the agent
    env = {e["name"]: e.get("value") for e in sidecar["env"]}
    data = {m["mountPath"] for m in sidecar["volumeMounts"]} - {"/tmp"}
    (data_dir,) = data
    assert env["COMPACTOR_DATABASE_URL"] == f"sqlite:///{data_dir}/compactor.db"
    (agent,) = the("Pod")["spec"]["containers"]
    base_urls = {e["name"]: e["value"] for e in agent["env"]}
    assert base_urls["OPENAI_BASE_URL"] == f"http://127.0.0.1:{CONTAINER_PORT}/v1"
    assert base_urls["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{CONTAINER_PORT}"


# -- the containers' commands, as the manifests run them ---------------------------------------


@pytest.fixture(scope="module")
def read_only_root() -> None:
    problem = read_only_root_problem()
    if problem is not None:
        message = f"read-only root filesystem not available ({problem}): CONTAINER RUNS SKIPPED"
        if os.environ.get("CI"):
            raise RuntimeError(message + " — CI must run them")
        pytest.skip(message)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    yield Host(tmp_path)


def as_run(container: dict[str, Any], kind: str, secrets: dict[str, str], port: int) -> Container:
    """The container with its environment resolved as the kubelet would: the image's ENV,
    then envFrom config maps, then env (secret references looked up in `secrets`)."""
    env = dict(image_env())
    for source in container.get("envFrom", []):
        env.update(the("ConfigMap", source["configMapRef"]["name"])["data"])
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        else:
            env[entry["name"]] = secrets[entry["valueFrom"]["secretKeyRef"]["key"]]
    volumes = {v["name"]: v for v in pod_specs()[kind]["volumes"]}
    writable = {}
    for mount in container.get("volumeMounts", []):
        assert "emptyDir" in volumes[mount["name"]]
        writable[mount["mountPath"]] = "tmpfs"
    return Container(with_port(container["command"], CONTAINER_PORT, port), env, writable)


def test_the_job_then_the_deployment_serve_on_postgresql_with_a_read_only_root(
    read_only_root: None, postgres_server: str, host: Host
) -> None:
    secrets = {**the("Secret")["stringData"], "database-url": postgres_server}
    containers = compactor_containers()
    migrated = run_to_completion(as_run(containers["Job"], "Job", secrets, 0), host)
    assert migrated.returncode == 0, migrated.stderr
    port = _free_port()
    with serving(as_run(containers["Deployment"], "Deployment", secrets, port), host, port) as up:
        for path in _probe_paths(containers["Deployment"]).values():
            assert httpx.get(up.url + path).status_code == 200, path
        key = secrets["api-keys"].partition(":")[2]
        created = httpx.post(
            f"{up.url}/sessions", json={}, headers={"Authorization": f"Bearer {key}"}
        )
        assert created.status_code == 201
        assert httpx.post(f"{up.url}/sessions", json={}).status_code == 401
        # The migrations came from the Job: the server found its schema in place.
        assert "schema is not at head" not in up.log_text()
        assert "COMPACTOR_STATE_KEY is not set" not in up.log_text()


def test_the_sidecar_serves_on_loopback_with_sqlite_on_its_emptydir(
    read_only_root: None, host: Host
) -> None:
    secrets = dict(the("Secret")["stringData"])
    sidecar = compactor_containers()["Pod"]
    port = _free_port()
    with serving(as_run(sidecar, "Pod", secrets, port), host, port) as up:
        # The exec probes, as the kubelet runs them inside the container.
        for probe in ("startupProbe", "livenessProbe"):
            command = with_port(sidecar[probe]["exec"]["command"], CONTAINER_PORT, port)
            command[0] = sys.executable
            assert subprocess.run(command, timeout=30).returncode == 0, probe
        # Loopback, no keys: the agent needs none.
        made = httpx.post(f"{up.url}/sessions", json={})
        assert made.status_code == 201
        assert httpx.get(f"{up.url}/sessions/{made.json()['id']}").status_code == 200
        assert "COMPACTOR_STATE_KEY is not set" not in up.log_text()


def test_an_exec_probe_fails_when_nothing_answers() -> None:
    sidecar = compactor_containers()["Pod"]
    command = with_port(sidecar["livenessProbe"]["exec"]["command"], CONTAINER_PORT, _free_port())
    command[0] = sys.executable
    assert subprocess.run(command, capture_output=True, timeout=30).returncode != 0
