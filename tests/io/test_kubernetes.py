"""deploy/kubernetes/: the manifests as the cluster's API server takes them, and the
rules an operator relies on.

There is no cluster here, so each resource is checked against the Kubernetes API's own
OpenAPI schemas (``kubernetes-validate`` bundles them: no download), strictly (an unknown
or misspelt field is an error, as ``kubectl apply --validate=strict`` makes it), for the
oldest and the newest Kubernetes the docs name. The resources are the ones ``kubectl
apply -k`` would send: the kustomization read the way kustomize reads it (this repository
uses only its resources, components, namespace and images, and a test keeps it so).
Then the rules: probes, requests, non-root, secrets only from the Secret, commands the
image has, grace periods that agree, what the autoscaler, the budget, the Services and
the CronJob point at, and the settings each container ends up with, parsed by the real
settings parser.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import trio
import yaml

from ragcore.settings import SETTINGS, bind_refusal, load_settings, voice_refusal
from tests.io.test_deploy import compose, image_env, last
from voiceio.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
KUBE = ROOT / "deploy" / "kubernetes"
#: the oldest Kubernetes deploy/README.md says the manifests need, and the newest the
#: validator knows
VERSIONS = (
    "1.29",
    kubernetes_validate.utils.major_minor(kubernetes_validate.utils.latest_version()),
)
#: examples the operator copies and fills in: never applied by the kustomization
EXAMPLES = ("secret.example.yaml", "ingress.example.yaml")
SECRET_NAME = "ragchat-secrets"
CONFIG_NAME = "ragchat-config"
SECRET_SETTINGS = {s.name for s in SETTINGS if s.secret}
#: compose's own: the database password is inside DATABASE_URL on Kubernetes
COMPOSE_ONLY = {"POSTGRES_PASSWORD"}
KUSTOMIZE_FIELDS = {"apiVersion", "kind", "namespace", "resources", "components", "images"}
CLUSTER_SCOPED = {"Namespace"}
#: what an operator adds to the example Secret for the voice server
VOICE_SECRETS = {"VOICEAI_API_KEY": "dg-test-key", "TELCO_AUTH_TOKEN": "0123456789abcdef" * 2}


# ---------------------------------------------------------------- reading the manifests


@functools.cache
def _documents(path: Path) -> tuple[dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(doc for doc in yaml.load_all(path.read_text(), Loader=loader) if doc)  # noqa: S506


def documents(path: Path) -> list[dict[str, Any]]:
    """The file's YAML documents (read once; a fresh copy each call)."""
    return copy.deepcopy(list(_documents(path)))


def kustomization(folder: Path, with_voice: bool) -> dict[str, Any]:
    """The folder's kustomization; ``with_voice``: its commented `components:` lines
    taken in, as deploy/README.md tells the operator to do."""
    text = (folder / "kustomization.yaml").read_text()
    if with_voice:
        text = text.replace("# components:\n#   - voice\n", "components:\n  - voice\n")
    return yaml.safe_load(text)


def kustomize(folder: Path, with_voice: bool = False) -> list[dict[str, Any]]:
    """What `kubectl apply -k folder` sends: resources (files and folders), components,
    then this kustomization's namespace and images over all of them."""
    spec = kustomization(folder, with_voice)
    resources: list[dict[str, Any]] = []
    for entry in spec.get("resources", []):
        path = (folder / entry).resolve()
        resources += kustomize(path) if path.is_dir() else documents(path)
    for entry in spec.get("components", []):
        resources += kustomize(folder / entry)
    resources = copy.deepcopy(resources)
    for resource in resources:
        if "namespace" in spec and resource["kind"] not in CLUSTER_SCOPED:
            resource["metadata"]["namespace"] = spec["namespace"]
        for image in spec.get("images", []):
            for container in all_containers(resource):
                name, _, tag = container["image"].partition(":")
                if name == image["name"]:
                    new_name = image.get("newName", name)
                    new_tag = image.get("newTag", tag)
                    container["image"] = f"{new_name}:{new_tag}" if new_tag else new_name
    return resources


@functools.cache
def _built(with_voice: bool) -> tuple[dict[str, Any], ...]:
    return tuple(kustomize(KUBE, with_voice))


def built(with_voice: bool = True) -> list[dict[str, Any]]:
    """The resources `kubectl apply -k deploy/kubernetes` sends (built once; a fresh copy)."""
    return copy.deepcopy(list(_built(with_voice)))


def the(kind: str, name: str, resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    found = [
        r
        for r in (built() if resources is None else resources)
        if r["kind"] == kind and r["metadata"]["name"] == name
    ]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def pod_spec(resource: dict[str, Any]) -> dict[str, Any] | None:
    if resource["kind"] == "Deployment":
        return resource["spec"]["template"]["spec"]
    if resource["kind"] == "CronJob":
        return resource["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return None


def pod_labels(resource: dict[str, Any]) -> dict[str, str]:
    if resource["kind"] == "Deployment":
        return resource["spec"]["template"]["metadata"]["labels"]
    return resource["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]


def all_containers(resource: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod_spec(resource)
    if spec is None:
        return []
    return [*spec.get("initContainers", []), *spec["containers"]]


def workloads() -> list[dict[str, Any]]:
    return [r for r in built() if pod_spec(r) is not None]


def containers() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """{workload/container: (pod spec, container)} of every container, init ones included."""
    found = {}
    for resource in workloads():
        spec = pod_spec(resource)
        assert spec is not None
        for container in all_containers(resource):
            found[f"{resource['metadata']['name']}/{container['name']}"] = (spec, container)
    return found


CONTAINERS = sorted(containers())


def deployment(component: str) -> dict[str, Any]:
    return the("Deployment", f"ragchat-{component}")


def main_container(component: str) -> dict[str, Any]:
    [container] = deployment(component)["spec"]["template"]["spec"]["containers"]
    return container


def config() -> dict[str, str]:
    return the("ConfigMap", CONFIG_NAME)["data"]


def example_secret() -> dict[str, str]:
    [secret] = documents(KUBE / "secret.example.yaml")
    return secret["stringData"]


def environment(container: dict[str, Any], secret: dict[str, str]) -> dict[str, str]:
    """The container's environment as the kubelet builds it: the image's ENV, then envFrom
    in order, then env; a secretKeyRef or configMapKeyRef to a missing key stops the pod."""
    env = dict(image_env())
    sources = {("configMap", CONFIG_NAME): config(), ("secret", SECRET_NAME): secret}
    for entry in container.get("envFrom", []):
        kind = "configMap" if "configMapRef" in entry else "secret"
        env.update(sources[(kind, entry[f"{kind}Ref"]["name"])])
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = entry["value"]
            continue
        ref = entry["valueFrom"]
        kind = "configMap" if "configMapKeyRef" in ref else "secret"
        key = ref[f"{kind}KeyRef"]
        source = sources[(kind, key["name"])]
        if key["key"] not in source:
            raise KeyError(f"{entry['name']}: the {kind} has no key {key['key']}")
        env[entry["name"]] = source[key["key"]]
    return env


def heartbeat_command() -> list[str]:
    return main_container("worker")["livenessProbe"]["exec"]["command"]


def _id(resource: dict[str, Any]) -> str:
    return f"{resource['kind']}/{resource['metadata']['name']}"


# ---------------------------------------------------------------- the files and the schemas


def test_every_manifest_is_applied_by_a_kustomization_or_is_an_example():
    listed = {KUBE / "kustomization.yaml", *(KUBE / name for name in EXAMPLES)}
    for folder in (KUBE, KUBE / "voice"):
        spec = kustomization(folder, with_voice=True)
        listed.add(folder / "kustomization.yaml")
        for entry in [*spec.get("resources", []), *spec.get("components", [])]:
            listed.add((folder / entry).resolve())
    files = {p.resolve() for p in KUBE.rglob("*") if p.is_file()}
    assert files <= {p.resolve() for p in listed}, "a manifest no kustomization applies"


@pytest.mark.parametrize("folder", [KUBE, KUBE / "voice"], ids=["base", "voice"])
def test_the_kustomizations_use_only_what_these_tests_read_as_kustomize_does(folder):
    spec = kustomization(folder, with_voice=True)
    assert set(spec) <= KUSTOMIZE_FIELDS
    assert spec["apiVersion"].startswith("kustomize.config.k8s.io/")


def test_voice_is_off_until_the_operator_enables_it_and_then_on():
    def kinds(resources):
        return {_id(r) for r in resources}

    assert "Deployment/ragchat-voice" not in kinds(built(with_voice=False))
    assert "Deployment/ragchat-voice" in kinds(built(with_voice=True))
    assert kustomization(KUBE / "voice", False)["kind"] == "Component"


def test_the_secret_is_never_applied_from_the_repository():
    assert not [r for r in built() if r["kind"] == "Secret"]


def examples() -> list[dict[str, Any]]:
    return [doc for name in EXAMPLES for doc in documents(KUBE / name)]


def _everything() -> list[dict[str, Any]]:
    return [*built(), *examples()]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("resource", _everything(), ids=_id)
def test_every_resource_is_valid_for_the_kubernetes_api(resource, version):
    try:
        kubernetes_validate.validate(resource, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = ".".join(str(p) for p in error.path)
        pytest.fail(f"{_id(resource)} on Kubernetes {version}: {where}: {error.message}")


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(livenesProbe={}),
        lambda d: d["spec"]["template"]["spec"].update(terminationGracePeriodSeconds="30s"),
        lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("name"),
    ],
    ids=["misspelt field", "wrong type", "missing required field"],
)
def test_the_validator_refuses_a_spoilt_deployment(spoil):
    resource = copy.deepcopy(deployment("app"))
    kubernetes_validate.validate(resource, VERSIONS[-1], strict=True)
    spoil(resource)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(resource, VERSIONS[-1], strict=True)


# ---------------------------------------------------------------- every container


@pytest.mark.parametrize("name", CONTAINERS)
def test_every_container_runs_unprivileged_with_requests_and_a_memory_limit(name):
    spec, container = containers()[name]
    pod = spec["securityContext"]
    assert pod["runAsNonRoot"] is True, name
    assert str(pod["runAsUser"]) == last("USER").split(":")[0], name  # the image's user
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
    assert spec["automountServiceAccountToken"] is False, name
    assert spec["enableServiceLinks"] is False, name
    own = container["securityContext"]
    assert own["allowPrivilegeEscalation"] is False, name
    assert own["readOnlyRootFilesystem"] is True, name
    assert own["capabilities"]["drop"] == ["ALL"], name
    assert {"cpu", "memory"} <= set(container["resources"]["requests"]), name
    assert "memory" in container["resources"]["limits"], name


@pytest.mark.parametrize("name", CONTAINERS)
def test_every_container_writes_only_to_emptydirs_at_data_dir_and_tmp(name):
    spec, container = containers()[name]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
    data_dir = config()["DATA_DIR"]
    assert data_dir == image_env()["DATA_DIR"]
    assert set(mounts) == {data_dir, "/tmp"}, name
    for volume in mounts.values():
        assert "sizeLimit" in volume["emptyDir"], name


@pytest.mark.parametrize("name", CONTAINERS)
def test_every_container_runs_a_command_the_image_has(name):
    spec, container = containers()[name]
    program, subcommand, *_ = container["command"]
    assert program == "ragchat", name
    assert subcommand in COMMANDS, name
    assert container["image"] == "{newName}:{newTag}".format(
        **kustomization(KUBE, True)["images"][0]
    )


def test_each_workload_runs_its_command():
    assert main_container("app")["command"] == ["ragchat", "serve"]
    assert main_container("voice")["command"] == ["ragchat", "voice"]
    assert main_container("worker")["command"] == ["ragchat", "worker"]
    [sync] = all_containers(the("CronJob", "ragchat-sync"))
    assert sync["command"] == ["ragchat", "sync"]


@pytest.mark.parametrize("component", ["app", "voice", "worker"])
def test_migrations_run_before_each_server_with_the_servers_environment(component):
    spec = deployment(component)["spec"]["template"]["spec"]
    [init] = spec["initContainers"]
    assert init["command"] == ["ragchat", "migrate"]
    assert init["envFrom"] == main_container(component)["envFrom"]
    database_url = [e for e in init["env"] if e["name"] == "DATABASE_URL"]
    assert database_url == [e for e in main_container(component)["env"] if e in database_url]


# ---------------------------------------------------------------- secrets and settings


@pytest.mark.parametrize("name", CONTAINERS)
def test_secrets_reach_containers_only_from_the_secret(name):
    spec, container = containers()[name]
    assert container["envFrom"] == [
        {"configMapRef": {"name": CONFIG_NAME}},
        {"secretRef": {"name": SECRET_NAME}},
    ], name
    for entry in container.get("env", []):
        assert "value" not in entry or entry["name"] not in SECRET_SETTINGS, name
        ref = entry.get("valueFrom", {})
        if entry["name"] in SECRET_SETTINGS:
            assert ref["secretKeyRef"]["name"] == SECRET_NAME, name
            assert ref["secretKeyRef"].get("optional") is not True, name  # required
        assert "secretKeyRef" not in ref or entry["name"] in SECRET_SETTINGS, name


def test_the_configmap_holds_ragchat_settings_and_no_secret():
    assert set(config()) <= {s.name for s in SETTINGS}
    assert not set(config()) & SECRET_SETTINGS
    assert all(isinstance(value, str) for value in config().values())


def test_the_example_secret_lists_every_secret_setting_and_holds_no_real_one():
    secret = example_secret()
    assert set(secret) == SECRET_SETTINGS - COMPOSE_ONLY
    for key, value in secret.items():
        assert value == "" or "CHANGE-ME" in value, key


def test_a_secret_without_the_database_url_keeps_every_pod_from_starting():
    """Without DATABASE_URL ragchat would start an embedded database in the pod's
    emptyDir: every container must refuse to start instead (a required secretKeyRef)."""
    secret = {k: v for k, v in example_secret().items() if k != "DATABASE_URL"}
    for name, (_, container) in containers().items():
        with pytest.raises(KeyError, match="DATABASE_URL"):
            environment(container, secret)
            pytest.fail(f"{name} starts without DATABASE_URL")


def test_the_api_container_starts_listening_with_the_key_on_the_external_database():
    env = environment(main_container("app"), example_secret())
    settings = load_settings(env)
    assert bind_refusal(settings) is None
    assert settings.app_bind == "0.0.0.0"
    assert settings.app_port == main_container("app")["ports"][0]["containerPort"]
    assert settings.database_url.startswith("postgresql://")
    assert settings.service_api_key == example_secret()["SERVICE_API_KEY"]
    assert settings.data_dir == config()["DATA_DIR"]
    without_key = {k: v for k, v in example_secret().items() if k != "SERVICE_API_KEY"}
    with pytest.raises(KeyError, match="SERVICE_API_KEY"):
        environment(main_container("app"), without_key)


def test_the_voice_container_starts_once_the_secret_holds_the_voice_keys():
    env = environment(main_container("voice"), {**example_secret(), **VOICE_SECRETS})
    settings = load_settings(env)
    assert voice_refusal(settings) is None
    assert settings.voice_bind == "0.0.0.0"
    assert settings.voice_port == main_container("voice")["ports"][0]["containerPort"]
    assert not settings.voice_allow_unsigned


@pytest.mark.parametrize("name", CONTAINERS)
def test_every_containers_settings_parse(name):
    spec, container = containers()[name]
    load_settings(environment(container, {**example_secret(), **VOICE_SECRETS}))


# ---------------------------------------------------------------- probes and stopping


def test_the_api_is_probed_on_its_health_routes():
    app = main_container("app")
    port = {p["name"]: p["containerPort"] for p in app["ports"]}
    assert port == {"http": 8000}
    for probe, path in [
        ("startupProbe", "/health/live"),
        ("livenessProbe", "/health/live"),  # never the database: an outage restarts nothing
        ("readinessProbe", "/health/ready"),
    ]:
        assert app[probe]["httpGet"] == {"path": path, "port": "http"}, probe
    # the readiness check waits 2.5 s at most for the database (ragio.db.pool)
    assert app["readinessProbe"]["timeoutSeconds"] >= 3


def test_the_voice_server_is_probed_on_its_port():
    voice = main_container("voice")
    assert {p["name"]: p["containerPort"] for p in voice["ports"]} == {"media": 8765}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert voice[probe]["tcpSocket"] == {"port": "media"}, probe


def test_the_worker_is_probed_on_its_heartbeat_file():
    worker = main_container("worker")
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert worker[probe]["exec"]["command"] == heartbeat_command(), probe
    assert heartbeat_command()[:2] == ["python", "-c"]
    assert "ports" not in worker


async def run_heartbeat_check(data_dir: Path, command: list[str]) -> int:
    result = await trio.run_process(
        [sys.executable, *command[1:]],
        env={"DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin"},
        check=False,
        capture_stdout=True,
        capture_stderr=True,
    )
    return result.returncode


def _compose_worker_check() -> list[str]:
    test = compose()["services"]["worker"]["healthcheck"]["test"]
    assert test[0] == "CMD"
    return test[1:]


@pytest.mark.parametrize("check", ["kubernetes", "compose"])
async def test_the_heartbeat_check_passes_on_a_fresh_file_only(tmp_path, check):
    command = heartbeat_command() if check == "kubernetes" else _compose_worker_check()
    assert await run_heartbeat_check(tmp_path, command) != 0  # not started yet
    beat = tmp_path / "worker.alive"
    beat.touch()
    assert await run_heartbeat_check(tmp_path, command) == 0
    stale = time.time() - 90
    os.utime(beat, (stale, stale))
    assert await run_heartbeat_check(tmp_path, command) != 0  # the loop stopped


@pytest.mark.parametrize("component", ["app", "voice", "worker"])
def test_every_deployment_has_all_three_probes(component):
    container = main_container(component)
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert probe in container, probe
        assert container[probe]["timeoutSeconds"] >= 3, probe
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120


def _pre_stop_pause(container: dict[str, Any]) -> int:
    pre_stop = container.get("lifecycle", {}).get("preStop")
    if pre_stop is None:
        return 0
    command = pre_stop["exec"]["command"]
    assert command[0] == "sleep" and len(command) == 2
    return int(command[1])


@pytest.mark.parametrize("resource", workloads(), ids=_id)
def test_the_grace_period_covers_the_pause_and_the_shutdown_grace(resource):
    spec = pod_spec(resource)
    assert spec is not None
    grace = load_settings(config()).shutdown_grace_seconds
    for container in spec["containers"]:
        # the server cuts off what is left 5 s after the grace, then closes the service
        needed = _pre_stop_pause(container) + grace + 10
        assert spec["terminationGracePeriodSeconds"] >= needed, _id(resource)


def test_the_api_pods_leave_the_jobs_to_the_workers_and_a_worker_runs():
    settings = load_settings(environment(main_container("app"), example_secret()))
    assert not settings.run_jobs
    assert deployment("worker")["spec"]["replicas"] >= 1


@pytest.mark.parametrize("component", ["app", "voice"])
def test_served_pods_leave_the_endpoints_before_sigterm(component):
    assert _pre_stop_pause(main_container(component)) >= 5


@pytest.mark.parametrize("component", ["app", "voice", "worker"])
def test_rollouts_start_a_new_pod_before_stopping_an_old_one(component):
    rolling = deployment(component)["spec"]["strategy"]["rollingUpdate"]
    assert rolling["maxUnavailable"] == 0 and rolling["maxSurge"] >= 1


# ---------------------------------------------------------------- what points at what


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _selected(selector: dict[str, str]) -> list[str]:
    return [_id(r) for r in workloads() if _selects(selector, pod_labels(r))]


def test_the_autoscaler_scales_the_api_deployment_from_two_pods():
    hpa = the("HorizontalPodAutoscaler", "ragchat-app")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert the(target["kind"], target["name"])["apiVersion"] == target["apiVersion"]
    assert target == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "ragchat-app"}
    assert hpa["spec"]["minReplicas"] >= 2
    assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
    # the autoscaler owns the count: a count in the Deployment would be reset by each apply
    assert "replicas" not in deployment("app")["spec"]
    [metric] = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert "cpu" in main_container("app")["resources"]["requests"]


@pytest.mark.parametrize("component", ["app", "voice"])
def test_the_disruption_budget_selects_exactly_the_components_pods(component):
    pdb = the("PodDisruptionBudget", f"ragchat-{component}")
    selected = _selected(pdb["spec"]["selector"]["matchLabels"])
    assert selected == [f"Deployment/ragchat-{component}"]
    # one pod at a time, whatever the count; never 0, which would block every drain
    assert pdb["spec"]["maxUnavailable"] == 1


@pytest.mark.parametrize("component", ["app", "voice"])
def test_the_service_reaches_the_components_pods_on_a_named_port(component):
    service = the("Service", f"ragchat-{component}")
    assert _selected(service["spec"]["selector"]) == [f"Deployment/ragchat-{component}"]
    ports = {p["name"] for p in main_container(component)["ports"]}
    for port in service["spec"]["ports"]:
        assert port["targetPort"] in ports


@pytest.mark.parametrize("component", ["app", "voice", "worker"])
def test_each_deployment_selects_its_own_pods_only(component):
    selector = deployment(component)["spec"]["selector"]["matchLabels"]
    assert _selected(selector) == [f"Deployment/ragchat-{component}"]


def test_the_example_ingresses_reach_the_services_on_their_named_ports():
    ingresses = [r for r in examples() if r["kind"] == "Ingress"]
    assert {_id(r) for r in ingresses} == {"Ingress/ragchat-app", "Ingress/ragchat-voice"}
    for ingress in ingresses:
        assert ingress["spec"]["tls"], _id(ingress)  # TLS ends at the ingress
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                service = the("Service", backend["name"])
                assert ingress["metadata"]["namespace"] == service["metadata"]["namespace"]
                ports = {p["name"] for p in service["spec"]["ports"]}
                assert backend["port"]["name"] in ports, _id(ingress)


def test_the_cronjob_syncs_every_night_one_run_at_a_time():
    cron = the("CronJob", "ragchat-sync")
    assert re.fullmatch(r"\S+( \S+){4}", cron["spec"]["schedule"])
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    job = cron["spec"]["jobTemplate"]["spec"]
    assert job["template"]["spec"]["restartPolicy"] == "Never"
    [sync] = all_containers(cron)
    assert sync["command"] == ["ragchat", "sync"]
    assert {"secretRef": {"name": SECRET_NAME}} in sync["envFrom"]  # ADDON_ENCRYPTION_KEY
    assert [e["name"] for e in sync["env"]] == ["DATABASE_URL"]


def test_everything_lives_in_the_namespace_and_runs_under_the_tokenless_account():
    namespace = the("Namespace", "ragchat")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for resource in built():
        if resource["kind"] != "Namespace":
            assert resource["metadata"]["namespace"] == "ragchat", _id(resource)
    account = the("ServiceAccount", "ragchat")
    assert account["automountServiceAccountToken"] is False
    for resource in workloads():
        spec = pod_spec(resource)
        assert spec is not None and spec["serviceAccountName"] == "ragchat"
