"""deploy/k8s: the kustomization renders, validates against the stated Kubernetes
version (kubernetes-validate, strict: unknown fields are errors), and says what the
service needs (probes on the right routes, drain and grace that add up, non-root with a
read-only root filesystem and writable emptyDirs where the server writes).

Rendering: ``kubectl kustomize`` when kubectl is installed; the base is also rendered
without it (the files its kustomization lists, with its image override), and both
renderings must agree.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
#: The Kubernetes version the manifests are written for (README, docs/SERVICE.md). The
#: preStop `sleep` action needs 1.30 or newer; 1.32 is validated.
KUBERNETES = "1.32.0"


def render_without_kubectl(directory: Path) -> list[dict]:
    """A kustomization of plain ``resources`` files plus ``images`` overrides."""
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert set(spec) <= {"apiVersion", "kind", "resources", "images"}, \
        "the no-kubectl renderer handles resources and images only"
    images = {i["name"]: f"{i.get('newName', i['name'])}:{i['newTag']}"
              for i in spec.get("images", [])}
    docs = []
    for name in spec["resources"]:
        for doc in yaml.safe_load_all((directory / name).read_text()):
            for container in _containers(doc):
                container["image"] = images.get(container["image"], container["image"])
            docs.append(doc)
    return docs


def render(directory: Path) -> list[dict]:
    if shutil.which("kubectl") is None:
        return render_without_kubectl(directory)
    out = subprocess.run(["kubectl", "kustomize", str(directory)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return list(yaml.safe_load_all(out))


def _containers(doc: dict) -> list[dict]:
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    return pod.get("containers", []) + pod.get("initContainers", [])


def by_kind(docs: list[dict]) -> dict[str, dict]:
    return {doc["kind"]: doc for doc in docs}


@pytest.fixture(scope="module")
def base() -> list[dict]:
    return render(K8S / "base")


def test_base_renders_the_same_with_and_without_kubectl(base):
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: only the renderer without it ran")
    plain = render_without_kubectl(K8S / "base")
    key = lambda d: (d["kind"], d["metadata"]["name"])
    assert sorted(map(key, plain)) == sorted(map(key, base))
    assert {key(d): d for d in plain} == {key(d): d for d in base}


@pytest.mark.parametrize("overlay", ["base", "overlays/extra-artifacts"])
def test_manifests_validate_against_the_stated_kubernetes_version(overlay):
    if overlay != "base" and shutil.which("kubectl") is None:
        pytest.skip("rendering an overlay's patches needs kubectl")
    docs = render(K8S / overlay)
    assert {d["kind"] for d in docs} == {"Deployment", "Service",
                                         "HorizontalPodAutoscaler", "PodDisruptionBudget"}
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_deployment_says_what_the_service_needs(base):
    kinds = by_kind(base)
    deployment = kinds["Deployment"]
    pod = deployment["spec"]["template"]
    spec = pod["spec"]
    (container,) = spec["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    port = container["ports"][0]["containerPort"]
    assert env["TOKSERVE_PORT"] == str(port) and env["TOKSERVE_HOST"] == "0.0.0.0"

    # probes: alive on /healthz (startup, liveness), traffic on /readyz
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"

    # shutdown adds up: preStop + drain + graceful timeout fit in the grace period
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    drain = float(env["TOKSERVE_DRAIN_SECONDS"])
    grace = float(env["TOKSERVE_GRACEFUL_TIMEOUT"])
    assert pre_stop + drain + grace < spec["terminationGracePeriodSeconds"]
    assert drain >= 2 * container["readinessProbe"]["periodSeconds"]  # seen before it stops

    # non-root, read-only root; the server writes only to its emptyDirs
    assert spec["securityContext"]["runAsNonRoot"] is True
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    for path in (env["PROMETHEUS_MULTIPROC_DIR"], env["TMPDIR"]):
        assert "emptyDir" in volumes[mounts[path]], path
    assert mounts[env["TOKSERVE_ARTIFACTS"]] == "extra-artifacts"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert int(env["TOKSERVE_WORKERS"]) <= int(container["resources"]["limits"]["cpu"])

    # metrics are scraped where they are served
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(port)
    assert annotations["prometheus.io/path"] == "/metrics"

    # the other objects point at this deployment and its pods
    labels = pod["metadata"]["labels"]
    assert kinds["Service"]["spec"]["selector"].items() <= labels.items()
    assert kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() \
        <= labels.items()
    target = kinds["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    (metric,) = kinds["HorizontalPodAutoscaler"]["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"


def test_the_extra_artifacts_overlay_fills_the_volume_before_the_server_starts():
    if shutil.which("kubectl") is None:
        pytest.skip("rendering an overlay's patches needs kubectl")
    spec = by_kind(render(K8S / "overlays" / "extra-artifacts"))["Deployment"]["spec"]
    pod = spec["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["image"].startswith("registry.example.com/tokserve-artifacts:")
    assert {m["name"] for m in init["volumeMounts"]} == {"extra-artifacts"}
    assert init["securityContext"]["readOnlyRootFilesystem"] is True
