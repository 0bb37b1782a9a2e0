"""The README's layout tree is the file tree: every folder of the engine and the service
is in it, at its place, and every file and folder it names exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _tree() -> list[tuple[int, str]]:
    """(depth, name) for each entry of the layout block (descriptions dropped)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Layout"):]
    block = section[section.index("```\n") + 4:]
    block = block[:block.index("```")]
    entries = []
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= 20:  # a description's continuation
            continue
        field = re.split(r"\s{2,}", line.strip())[0]
        for name in field.split(", "):
            entries.append((indent // 2, name.strip()))
    return entries


def _named_paths() -> tuple[set[Path], set[Path]]:
    """(files, folders) the tree names, as repository paths."""
    files: set[Path] = set()
    folders: set[Path] = set()
    parents: list[Path] = []
    for depth, name in _tree():
        if depth == 0 and " " in name:  # "tests/  benchmarks/ ..." on one line
            continue
        del parents[depth:]
        base = parents[-1] if parents else Path()
        path = base / name.rstrip("/")
        if name.endswith("/"):
            folders.add(path)
            parents.append(path)
        elif "*" not in name:
            files.add(path)
    return files, folders


def test_readme_layout_names_only_what_exists():
    files, folders = _named_paths()
    missing = sorted(str(p) for p in files if not (REPO / p).is_file())
    missing += sorted(str(p) + "/" for p in folders if not (REPO / p).is_dir())
    assert not missing, f"README's layout names what is not there: {missing}"


def test_readme_layout_shows_every_folder():
    _, folders = _named_paths()
    actual = {p.relative_to(REPO) for top in ("engine", "service")
              for p in (REPO / top).rglob("*")
              if p.is_dir() and "__pycache__" not in p.parts and not p.name.startswith(".")}
    absent = sorted(str(p) for p in actual
                    if p not in folders and not any(f.is_relative_to(p) for f in folders))
    assert not absent, f"README's layout does not show these folders: {absent}"
