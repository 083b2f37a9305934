"""The deploy files are checked, not only written: the Kubernetes manifests against the API's
schemas (unknown fields refused), the compose file against the Compose specification's JSON
Schema, and both against the code they run (its commands, settings and ports)."""

from __future__ import annotations

import json
import re
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import msgspec
import pytest
import yaml

from services.operator.cli import SEALING
from services.operator.cli import main as playtable
from services.operator.gateway import ROOT
from shared.infra.settings import CONVENTIONAL_NAMES, Settings

DEPLOY = ROOT / "infra" / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "compose.yaml"
DEPLOYING = ROOT / "docs" / "deploying.md"
KUBERNETES_VERSION = "1.33.0"
"""The API the manifests are checked against (kubernetes-validate carries its schemas)."""

IMAGE = "playtable:0.1.0"
HTTP_SERVICES = {"lobby": "lobby_port", "match": "match_port", "webhooks-api": "webhooks_port"}
"""Each HTTP process's command and the setting naming its port."""
PROCESSES = {*HTTP_SERVICES, "rules", "webhooks", "clocks", "bots"}
"""One Deployment per process kind (``playtable webhooks`` is the dispatcher and its Celery
worker in one process)."""
AUTOSCALED = {"match", "rules"}
SECRET = "playtable"
SECRET_KEYS = {"DATABASE_URL", "REDIS_URL", "PLAYTABLE_OPERATOR_KEY", "PLAYTABLE_SECRET_KEYS"}


def manifests() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, document)
        for path in sorted(KUBERNETES.glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if document is not None
    ]


def of_kind(kind: str) -> dict[str, dict[str, Any]]:
    found = [document for _, document in manifests() if document["kind"] == kind]
    named = {document["metadata"]["name"]: document for document in found}
    assert len(named) == len(found), f"two {kind}s share a name"
    return named


def pod_containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    pod = workload["spec"]["template"]["spec"]
    return [*pod.get("initContainers", []), *pod["containers"]]


def playtable_containers() -> list[tuple[str, dict[str, Any]]]:
    """Every container of the project's image, with its workload's name."""
    return [
        (name, container)
        for kind in ("Deployment", "Job")
        for name, workload in of_kind(kind).items()
        for container in pod_containers(workload)
        if container["image"] == IMAGE
    ]


def setting_names() -> set[str]:
    """The environment variables ``Settings.from_env`` reads."""
    names = set(CONVENTIONAL_NAMES.values())
    for field in msgspec.structs.fields(Settings):
        names.add(f"PLAYTABLE_{field.name.upper()}")
    return names


def is_playtable_command(args: list[str], capsys: pytest.CaptureFixture[str]) -> bool:
    """Whether ``playtable ARGS`` parses (its ``--help`` exits 0; an unknown command, 2)."""
    with pytest.raises(SystemExit) as exited:
        playtable([*args, "--help"])
    capsys.readouterr()
    return exited.value.code == 0


# --- Kubernetes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [document for _, document in manifests()],
    ids=lambda d: f"{d['kind']}-{d['metadata']['name']}",
)
def test_every_manifest_validates_strictly(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_one_deployment_per_process_kind_and_the_gateway() -> None:
    deployments = of_kind("Deployment")
    assert set(deployments) == PROCESSES | {"gateway"}
    for name in PROCESSES:
        (container,) = deployments[name]["spec"]["template"]["spec"]["containers"]
        assert container["image"] == IMAGE and container["args"] == [name]
    for name, deployment in deployments.items():
        selector = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), name


def test_every_container_has_requests_and_limits() -> None:
    for kind in ("Deployment", "Job"):
        for name, workload in of_kind(kind).items():
            for container in pod_containers(workload):
                resources = container["resources"]
                assert {"cpu", "memory"} <= resources["requests"].keys(), name
                assert {"cpu", "memory"} <= resources["limits"].keys(), name


def test_http_services_probe_health_and_ready_on_their_port() -> None:
    deployments = of_kind("Deployment")
    services = of_kind("Service")
    defaults = Settings()
    for name, setting in HTTP_SERVICES.items():
        (container,) = deployments[name]["spec"]["template"]["spec"]["containers"]
        env = {item["name"]: item.get("value") for item in container["env"]}
        port = int(env.get(f"PLAYTABLE_{setting.upper()}") or getattr(defaults, setting))
        assert [item["containerPort"] for item in container["ports"]] == [port], name
        assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": port}, name
        assert container["readinessProbe"]["httpGet"] == {"path": "/ready", "port": port}, name
        (exposed,) = services[name]["spec"]["ports"]
        assert exposed["port"] == port and exposed["targetPort"] == container["ports"][0]["name"]
        assert services[name]["spec"]["selector"].items() <= (
            deployments[name]["spec"]["template"]["metadata"]["labels"].items()
        )
    for name in PROCESSES - HTTP_SERVICES.keys():  # no HTTP port to probe
        (container,) = deployments[name]["spec"]["template"]["spec"]["containers"]
        assert "ports" not in container, name
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            assert "httpGet" not in container.get(probe, {}), (name, probe)


def test_the_gateway_serves_the_checked_config_to_the_world() -> None:
    gateway = of_kind("Deployment")["gateway"]["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in gateway["volumes"]}
    configmap = yaml.safe_load((KUBERNETES / "gateway-config.yaml").read_text())
    assert volumes["config"]["configMap"]["name"] == configmap["metadata"]["name"]
    (nginx,) = gateway["containers"]
    mounts = {mount["mountPath"]: mount for mount in nginx["volumeMounts"]}
    assert mounts["/etc/nginx/nginx.conf"]["subPath"] in configmap["data"]
    assert "root /srv/playtable;" in configmap["data"]["nginx.conf"]
    assert mounts["/srv/playtable"]["name"] == "contract"  # filled from the image
    upstreams = re.findall(r"server (\S+):(\d+);", configmap["data"]["nginx.conf"])
    services = of_kind("Service")
    for host, port in upstreams:
        assert [p["port"] for p in services[host]["spec"]["ports"]] == [int(port)], host
    assert services["gateway"]["spec"]["type"] == "LoadBalancer"
    assert {name for name, spec in services.items() if spec["spec"].get("type")} == {"gateway"}


def test_the_services_trust_only_the_gateways_pods_to_name_the_client() -> None:
    """Not the cluster's private ranges: any pod there could pick who it is counted as."""
    (config,) = of_kind("ConfigMap")["playtable-config"]["data"]["PLAYTABLE_TRUSTED_PROXIES"].split(
        ","
    )
    peers = of_kind("Service")[config]["spec"]
    assert peers["clusterIP"] == "None" and peers["publishNotReadyAddresses"] is True
    gateway = of_kind("Deployment")["gateway"]["spec"]["template"]["metadata"]["labels"]
    assert peers["selector"] == {"app.kubernetes.io/name": "gateway"}
    assert peers["selector"].items() <= gateway.items()
    for name, deployment in of_kind("Deployment").items():
        if name != "gateway":
            labels = deployment["spec"]["template"]["metadata"]["labels"]
            assert not peers["selector"].items() <= labels.items(), name


def test_match_and_rules_autoscale_and_every_deployment_has_a_budget() -> None:
    deployments = of_kind("Deployment")
    autoscalers = of_kind("HorizontalPodAutoscaler")
    targets = {hpa["spec"]["scaleTargetRef"]["name"] for hpa in autoscalers.values()}
    assert targets == AUTOSCALED
    for hpa in autoscalers.values():
        target = hpa["spec"]["scaleTargetRef"]
        assert target["kind"] == "Deployment" and target["name"] in deployments
        assert "replicas" not in deployments[target["name"]]["spec"]  # the autoscaler's
        assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
        (container,) = deployments[target["name"]]["spec"]["template"]["spec"]["containers"]
        assert "cpu" in container["resources"]["requests"]  # utilization is of the request
    budgets = of_kind("PodDisruptionBudget")
    for name, deployment in deployments.items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        covering = [
            budget
            for budget in budgets.values()
            if budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
        ]
        assert len(covering) == 1, name


def test_the_migrations_run_as_a_job() -> None:
    (job,) = of_kind("Job").values()
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE and container["args"] == ["migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")


def test_the_environment_is_settings_and_secrets_come_from_the_secret(
    capsys: pytest.CaptureFixture[str],
) -> None:
    known = setting_names()
    configmaps = of_kind("ConfigMap")
    for name, container in playtable_containers():
        if "command" not in container:  # the image's entrypoint: playtable
            assert container["args"] and is_playtable_command(container["args"], capsys), name
        for item in container.get("env", []):
            assert item["name"] in known, (name, item["name"])
            secret = item.get("valueFrom", {}).get("secretKeyRef")
            if item["name"] in SECRET_KEYS:
                assert secret == {**secret, "name": SECRET, "key": item["name"]}, name
            else:
                assert "valueFrom" not in item, (name, item["name"])
        for source in container.get("envFrom", []):
            assert "secretRef" not in source  # secrets only by name, key by key
            configmap = configmaps[source["configMapRef"]["name"]]
            assert set(configmap["data"]) <= known, set(configmap["data"]) - known
        assert SECRET_KEYS.isdisjoint(
            key
            for source in container.get("envFrom", [])
            for key in configmaps[source["configMapRef"]["name"]]["data"]
        )
    assert "Secret" not in Counter(document["kind"] for _, document in manifests())


def test_the_services_that_seal_get_the_keyring_from_the_secret_and_no_other_does() -> None:
    """Without it they refuse to start; every copy must have the same one."""
    for name, container in playtable_containers():
        env = {item["name"]: item for item in container.get("env", [])}
        keyring = env.get("PLAYTABLE_SECRET_KEYS")
        if container.get("args", [""])[0] in SEALING:
            assert keyring is not None, name
            assert keyring["valueFrom"]["secretKeyRef"].get("optional") is not True, name
        else:
            assert keyring is None, name
    compose = yaml.safe_load(COMPOSE.read_text())
    required = compose["services"]["match"]["environment"]["PLAYTABLE_SECRET_KEYS"]
    assert re.fullmatch(r"\$\{PLAYTABLE_SECRET_KEYS:\?.+\}", required)  # compose refuses without


def test_the_deploying_page_creates_the_secret_the_manifests_read() -> None:
    readme = DEPLOYING.read_text()
    command = re.search(r"kubectl create secret generic (\S+)((?:.*\\\n)*.*)", readme)
    assert command is not None, "docs/deploying.md does not say how to create the Secret"
    assert command.group(1) == SECRET
    assert set(re.findall(r"--from-literal=(\w+)=", command.group(2))) == SECRET_KEYS


# --- Compose ------------------------------------------------------------------------------


def compose_schema() -> dict[str, Any]:
    """The Compose specification's schema, as check-jsonschema vendors it."""
    vendored = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    return json.loads(vendored.read_text())


def test_the_compose_file_validates_against_the_compose_specification() -> None:
    schema = compose_schema()
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    checker = validator(schema, format_checker=validator.FORMAT_CHECKER)
    compose = yaml.safe_load(COMPOSE.read_text())
    errors = [
        f"{list(error.absolute_path)}: {error.message}" for error in checker.iter_errors(compose)
    ]
    assert errors == []
    broken = {**compose, "services": {**compose["services"], "rules": {"comand": ["rules"]}}}
    assert not checker.is_valid(broken)  # an unknown key is refused


def test_the_compose_services_run_real_commands_with_real_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    known = setting_names()
    ours = {
        name: service
        for name, service in compose["services"].items()
        if service.get("image") == "playtable:latest"
    }
    assert PROCESSES | {"migrate"} <= set(ours)
    for name, service in ours.items():
        assert is_playtable_command(service["command"], capsys), name
        assert set(service["environment"]) <= known, set(service["environment"]) - known
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in compose["services"], (name, dependency)
            if dependency == "migrate":
                assert condition["condition"] == "service_completed_successfully"
    gateway = compose["services"]["gateway"]
    assert "./gateway.conf:/etc/nginx/nginx.conf:ro" in gateway["volumes"]
    # only the gateway names the client in X-Forwarded-For
    assert {service["environment"]["PLAYTABLE_TRUSTED_PROXIES"] for service in ours.values()} == {
        "gateway"
    }
    assert Path(DEPLOY / "gateway.conf").exists()
