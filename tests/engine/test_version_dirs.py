"""versions.py: the one home of ``<root>/<name>/<version>/manifest.json`` (discovery, the
version rule, ``name@version`` resolution, the manifest's required keys and hashes)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

import tokserve
from tokserve import versions


def _version(root: Path, name: str, version: str) -> Path:
    """A copy of the bundled cl100k_base version as ``root/name/version``."""
    target = root / name / version
    shutil.copytree(tokserve.bundled_root() / "cl100k_base" / "1", target)
    return target


def test_version_key_is_natural_order():
    assert sorted(["10", "2", "1.10", "1.9", "2a"], key=versions.version_key) == [
        "1.9", "1.10", "2", "2a", "10"]


def test_discovery_sees_visible_version_dirs_with_a_manifest(tmp_path):
    for version in ("1", "2", "10"):
        _version(tmp_path, "cl", version)
    (tmp_path / "cl" / ".11.partial").mkdir()  # an import being written: not a version
    (tmp_path / "cl" / ".11.partial" / "manifest.json").write_text("{}")
    (tmp_path / "cl" / "notes").mkdir()  # no manifest: not a version
    (tmp_path / "empty").mkdir()
    (tmp_path / "README.md").write_text("not a name")
    assert versions.names(tmp_path) == ["cl"]
    assert [p.name for p in versions.versions(tmp_path / "cl")] == ["1", "10", "2"]
    assert [p.relative_to(tmp_path).as_posix() for p in versions.version_dirs(tmp_path)] == [
        "cl/1", "cl/10", "cl/2"]
    assert versions.latest_version(tmp_path / "cl").name == "10"
    assert versions.version_dirs(tmp_path / "absent") == []
    assert tokserve.bundled_names(tmp_path) == ["cl"]


def test_resolution_of_names_and_versions(tmp_path):
    for version in ("1", "2"):
        _version(tmp_path, "cl", version)
    assert versions.split_ref("cl@2") == ("cl", "2")
    assert versions.split_ref("cl") == ("cl", None)
    assert versions.resolve("cl", tmp_path) == tmp_path / "cl" / "2"
    assert versions.resolve("cl@1", tmp_path) == tmp_path / "cl" / "1"
    with pytest.raises(tokserve.ArtifactError, match="has no version '3'"):
        versions.resolve("cl@3", tmp_path)
    with pytest.raises(tokserve.ArtifactError, match="named 'nope'; available: cl"):
        versions.resolve("nope", tmp_path)
    assert versions.resolve("cl100k_base").parent == tokserve.bundled_root() / "cl100k_base"
    assert tokserve.load("cl@1", root=tmp_path).encode("hello world") == [15339, 1917]


def test_manifest_read_and_checks(tmp_path):
    version = _version(tmp_path, "cl", "1")
    manifest, raw = versions.read_manifest(version)
    assert manifest["name"] == "cl100k_base" and raw == (version / "manifest.json").read_bytes()
    assert set(versions.verify_files(version, manifest)) == set(manifest["files"])
    versions.check_tokenizer_hash(version, manifest, manifest["tokenizer_hash"])
    with pytest.raises(tokserve.ArtifactError, match="differs from the manifest's"):
        versions.check_tokenizer_hash(version, manifest, "sha256:0")
    del manifest["format"]
    (version / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(tokserve.ArtifactError, match="lacks required key 'format'"):
        versions.read_manifest(version)


# ==== the name grammar (issue 33, point 5) and leftovers of failed imports (point 7) ====

VALID = ["a", "cl100k_base", "deepseek-v4", "1", "1.10", "2024-05-01", "v2_rc.1", "A" * 128]
INVALID = ["", ".", "..", ".hidden", "../x", "../../../x", "/abs", "a/b", "a\\b", "a@b",
           "a\nb", "a\n", "a b", "x" * 129, "naïve", "a:b", None, 7]


@pytest.mark.parametrize("value", VALID)
def test_names_in_the_grammar_are_accepted(value):
    assert versions.is_valid_name(value) and versions.check_name(value) == value


@pytest.mark.parametrize("value", INVALID, ids=repr)
def test_names_outside_the_grammar_are_refused_in_one_line(value):
    assert not versions.is_valid_name(value)
    with pytest.raises(tokserve.ArtifactError) as info:
        versions.check_name(value, "version")
    assert info.value.message.startswith("invalid version ")
    assert "\n" not in info.value.message and versions.NAME_GRAMMAR in info.value.message


def test_discovery_skips_bad_names_with_a_warning_and_partial_leftovers_silently(tmp_path,
                                                                                caplog):
    _version(tmp_path, "cl", "1")
    _version(tmp_path, "cl", "bad version")  # a version no name@version can address
    _version(tmp_path, "bad@name", "1")
    leftover = tmp_path / "cl" / ".2.partial"  # a failed or killed import's leftover
    leftover.mkdir()
    (leftover / "manifest.json").write_text("{}")
    with caplog.at_level(logging.WARNING, logger="tokserve.versions"):
        found = versions.version_dirs(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["cl/1"]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and all(r.levelno == logging.WARNING for r in caplog.records)
    assert any("'bad@name'" in w for w in warned) and any("'bad version'" in w for w in warned)
    assert not any(".partial" in w for w in warned)


def test_resolution_and_manifests_refuse_names_outside_the_grammar(tmp_path):
    _version(tmp_path, "cl", "1")
    for ref in ("../cl", "cl@../1", "cl@", "cl@1@2", ".."):
        with pytest.raises(tokserve.ArtifactError, match="invalid (name|version)"):
            versions.resolve(ref, tmp_path)
    version = _version(tmp_path, "odd", "1")
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["version"] = "1\n"
    (version / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(tokserve.ArtifactError, match=r"invalid version '1\\n'"):
        versions.read_manifest(version)
