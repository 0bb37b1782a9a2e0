"""The documents the repository publishes stay true to the contract and to the tree.

* ``docs/API.md`` is the published contract: ``../shared/API.md`` (the source it extends)
  plus our additions, so every line of the shared contract appears in it unchanged.
* No document links outside the repository (a published product cannot point at
  ``../shared``), and every relative link points at a file that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_API = REPO.parent / "shared" / "API.md"
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _documents() -> list[Path]:
    skip = {".git", "build", "node_modules"}
    return [p for p in REPO.rglob("*.md") if not skip & set(p.relative_to(REPO).parts)]


def test_api_md_extends_the_shared_contract_without_changing_it():
    if not SHARED_API.is_file():
        pytest.skip("needs ../shared/API.md beside the clone (the contract's source)")
    ours = set((REPO / "docs" / "API.md").read_text().splitlines())
    missing = [ln for ln in SHARED_API.read_text().splitlines() if ln.strip() and ln not in ours]
    assert not missing, f"docs/API.md lost or changed {len(missing)} line(s): {missing[:3]}"


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_stay_inside_the_repository_and_resolve(doc):
    for target in _LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(REPO), f"{doc.name} links outside the repo: {target}"
        assert path.exists(), f"{doc.name} links to a missing file: {target}"
    assert "../shared/API.md" not in doc.read_text(), f"{doc.name} points at ../shared/API.md"


def test_readme_curl_commands_work_against_a_live_server():
    """The README's `curl` lines, as written, against a real server (the port swapped)."""
    import shutil
    import subprocess

    from servers import LiveServer
    from tokserve.service.runtime.settings import Settings

    if shutil.which("curl") is None:
        pytest.skip("needs the curl command")
    blocks = re.findall(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    lines = [ln for block in blocks for ln in block.splitlines() if ln.startswith("curl ")]
    assert len(lines) >= 3
    with LiveServer(Settings(_env_file=None)) as srv:
        for line in lines:
            command = line.replace("localhost:8000", srv.url)
            out = subprocess.run(["bash", "-c", command + " -w ' %{http_code}'"],
                                 capture_output=True, text=True, timeout=60)
            body, _, status = out.stdout.rpartition(" ")
            assert out.returncode == 0 and status == "200", (line, out.stdout, out.stderr)
            assert '"tokenizer_hash"' in body
