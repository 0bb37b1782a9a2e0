"""Every image the deployment files run is built by one documented command.

No container engine runs here, so this reads: the image the base kustomization renders
to and the one docker-compose.yml runs are the name ``docker build -t <name> .`` gives in
docs/SERVICE.md and beside the image in the manifest; the extra-artifacts overlay's data
image is built by its own one-line command, from a Dockerfile that exists, into the
directory the init container copies from.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from test_k8s import K8S, render_without_kubectl

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]
SERVICE_DOC = REPO / "docs" / "SERVICE.md"
OVERLAY = K8S / "overlays" / "extra-artifacts"


def _build_commands(text: str) -> list[list[str]]:
    """Each ``docker build ...`` command in ``text``: backquoted, or on its own line up
    to a run of spaces (a comment or an arrow follows it)."""
    found = re.findall(r"docker build [^`\n]*", text)
    return [shlex.split(re.split(r"\s{2,}| && ", c.strip())[0]) for c in found]


def _builds(commands: list[list[str]], image: str) -> list[list[str]]:
    """The commands that tag ``image``."""
    return [c for c in commands if "-t" in c and c[c.index("-t") + 1] == image]


def test_the_service_image_of_the_manifests_and_compose_is_one_documented_command():
    (deployment,) = [d for d in render_without_kubectl(K8S / "base")
                     if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    image = container["image"]
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["tokserve"]
    assert compose["image"] == image and compose["build"] == "."
    expected = ["docker", "build", "-t", image, "."]
    # in docs/SERVICE.md, in the comment beside the image in the manifest, and in compose's
    for text in (SERVICE_DOC.read_text(),
                 next(ln for ln in (K8S / "base" / "deployment.yaml").read_text().splitlines()
                      if ln.strip().startswith("image:")),
                 (REPO / "docker-compose.yml").read_text()):
        assert expected in _build_commands(text), text[:200]
    # that command's context is the repository's Dockerfile
    assert (REPO / "Dockerfile").is_file()


def test_the_artifacts_image_of_the_overlay_is_one_documented_command():
    spec = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    (entry,) = [i for i in spec["images"] if i["name"] == "tokserve-artifacts"]
    image = f"{entry['newName']}:{entry['newTag']}"
    for text in (SERVICE_DOC.read_text(), (OVERLAY / "kustomization.yaml").read_text(),
                 (OVERLAY / "Dockerfile").read_text()):
        (command,) = _builds(_build_commands(text), image)
        dockerfile = REPO / command[command.index("-f") + 1]
        context = REPO / command[-1]
        assert dockerfile == OVERLAY / "Dockerfile" and context.is_dir(), command
    # the image holds the context under /artifacts, where the init container copies from
    copies = [ln.split()[1:] for ln in (OVERLAY / "Dockerfile").read_text().splitlines()
              if ln.startswith("COPY ")]
    assert copies == [[".", "/artifacts/"]]
    (patch,) = yaml.safe_load((OVERLAY / "init-artifacts.yaml").read_text())
    (init,) = patch["value"]
    assert init["image"] == "tokserve-artifacts"
    assert init["command"][:3] == ["cp", "-R", "/artifacts/."]
