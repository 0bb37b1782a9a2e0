"""Versioned tokenizer registry: ``name`` / ``name@version`` → a loaded, verified entry.

Layout on disk: ``<root>/<name>/<version>/manifest.json`` plus the files the manifest
lists. Every version directory is loaded with ``tokserve.load(dir)``, which checks each
file's sha256 against the manifest; a version that fails (hash mismatch, unreadable or
unsupported file) is refused with ONE log line naming the directory and the reason, and
the other versions keep serving.

Invariants (these are what hot reload relies on):

* An ``Entry`` is immutable once published: a served version is never mutated, only
  added or removed as a whole.
* Readers never take the lock: they read ``self._snapshot``, an immutable mapping that
  writers replace atomically (copy-on-write) under ``self._lock``.
* A bare name resolves to its *current* version, the highest by natural ordering
  (``"2" < "10"``, ``"1.9" < "1.10"``).
"""

from __future__ import annotations

import difflib
import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...model_table import resolve_model, tiktoken_table
from ...versions import split_ref, version_dirs, version_key
from ..errors import TokenizerNotFound, UnknownModel, shorten

log = logging.getLogger("tokserve.registry")


@dataclass(frozen=True)
class Entry:
    """One loaded tokenizer version. ``hash`` is the engine's content-derived hash."""

    name: str
    version: str
    path: Path
    tokenizer: Any  # tokserve.Tokenizer
    manifest: dict[str, Any]
    chat_templates: dict[str, str] = field(default_factory=dict)
    chat_template_hashes: dict[str, str] = field(default_factory=dict)
    default_chat_template: str | None = None

    @cached_property  # read on every request; an entry never changes
    def hash(self) -> str:
        return self.tokenizer.hash

    @cached_property
    def ref(self) -> str:
        """The ``name@version`` every response echoes."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class LoadFailure:
    path: Path
    reason: str


@dataclass
class SyncReport:
    """What one rescan changed: refs added, removed and replaced, dirs refused."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    failed: list[LoadFailure] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"added": self.added, "removed": self.removed, "replaced": self.replaced,
                "failed": [{"path": str(f.path), "reason": f.reason} for f in self.failed]}


def load_entry(version_dir: Path, tables: Path | None = None) -> Entry:
    """Load and verify one ``<root>/<name>/<version>/`` directory (its compiled tables
    mapped from, or written to, ``tables``: the engine's shared table files).

    Raises:
        tokserve.errors.ArtifactError: a file (chat templates included) is missing,
            unreadable or fails its hash.
        ValueError / OSError: the manifest is malformed.
    """
    from ... import load  # the engine; imported here so this module stays cheap to import

    tok = load(str(version_dir), tables=tables)
    manifest = tok.manifest or {}
    name = str(manifest.get("name") or version_dir.parent.name)
    version = str(manifest.get("version") or version_dir.name)
    if name != version_dir.parent.name or version != version_dir.name:
        raise ValueError(
            f"manifest says {name}@{version} but the directory is "
            f"{version_dir.parent.name}/{version_dir.name}"
        )
    templates = tok.artifact.chat_templates  # read and verified by the engine's load
    return Entry(name, version, version_dir, tok, manifest,
                 {t: template.source for t, template in templates.items()},
                 {t: template.sha256 for t, template in templates.items()},
                 tok.artifact.default_chat_template)


def _unchanged(entry: Entry) -> bool:
    """Whether ``entry``'s manifest on disk is still the one it was loaded from.

    The manifest pins every file's sha256, so an unchanged manifest means unchanged
    content as far as serving goes (files edited under an unchanged manifest are caught
    by ``tokserve artifact verify``, and by the next load, never by requests: the
    served tokenizer lives in memory).
    """
    try:
        return json.loads((entry.path / "manifest.json").read_bytes()) == entry.manifest
    except (OSError, ValueError):
        return False


def discover(roots: Iterable[Path]) -> list[Path]:
    """All ``<root>/<name>/<version>/`` dirs holding a manifest.json, in scan order."""
    found = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            log.warning("artifact root %s does not exist; skipped", root)
            continue
        found += version_dirs(root)
    return found


class Registry:
    """Thread-safe map of loaded versions; see the module docstring for invariants."""

    def __init__(self, default: str | None = None, tables: Path | None = None) -> None:
        self.tables = tables  # compiled tables shared by worker processes (tokserve.load)
        self._lock = threading.RLock()
        self._sync_lock = threading.Lock()  # one rescan at a time; readers never wait
        self._snapshot: MappingProxyType[str, dict[str, Entry]] = MappingProxyType({})
        self._current: MappingProxyType[str, Entry] = MappingProxyType({})
        self._aliases: MappingProxyType[str, str] = MappingProxyType({})
        self.failures: list[LoadFailure] = []
        self.default = default

    # ---- loading ----------------------------------------------------------------
    def load_roots(self, roots: Iterable[Path]) -> list[Entry]:
        """Load every version under ``roots``; failures are logged and recorded, not raised."""
        loaded = []
        for vdir in discover(roots):
            entry = self.add_version(vdir)
            if entry is not None:
                loaded.append(entry)
        return loaded

    def sync(self, roots: Iterable[Path]) -> SyncReport:
        """Make the published table match the version dirs now under ``roots``.

        Hot reload (SIGHUP, POST /admin/reload). New dirs are loaded and verified;
        dirs that vanished are unpublished; a dir whose manifest changed is loaded as a
        new ``Entry`` and swapped in. Everything else keeps its ``Entry`` object, and a
        dir that fails to load leaves what was published for it untouched (a bad copy
        never takes a serving version down). Loading happens before one atomic publish,
        so a request sees the old table or the new one, never a mix.
        """
        with self._sync_lock:
            report = SyncReport()
            old = {(e.name, e.version): e for e in self.entries()}
            table: dict[str, dict[str, Entry]] = {}
            # A later root's name@version wins over an earlier one's, as at start.
            dirs = {(vdir.parent.name, vdir.name): vdir for vdir in discover(roots)}
            for key, vdir in dirs.items():
                current = old.get(key)
                if current is not None and current.path == vdir and _unchanged(current):
                    table.setdefault(key[0], {})[key[1]] = current
                    continue
                entry = self._load(vdir, report.failed)
                if entry is None:
                    if current is not None:
                        table.setdefault(key[0], {})[key[1]] = current
                    continue
                table.setdefault(entry.name, {})[entry.version] = entry
                (report.replaced if current is not None else report.added).append(entry.ref)
            report.removed = [f"{n}@{v}" for n, v in old if v not in table.get(n, {})]
            with self._lock:
                self._publish(table)
                self.failures = list(report.failed)
            log.info("artifacts synced: added %s, removed %s, replaced %s, refused %d",
                     report.added or "none", report.removed or "none",
                     report.replaced or "none", len(report.failed))
            return report

    def _load(self, version_dir: Path, failures: list[LoadFailure]) -> Entry | None:
        try:
            entry = load_entry(Path(version_dir), self.tables)
        except Exception as exc:  # one clear line per refused artifact; keep serving others
            reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            log.error("artifact refused: %s: %s: %s", version_dir, type(exc).__name__, reason)
            failures.append(LoadFailure(Path(version_dir), reason))
            return None
        log.info("artifact loaded: %s (%s) from %s", entry.ref, entry.hash, version_dir)
        return entry

    def add_version(self, version_dir: Path) -> Entry | None:
        """Load one version dir and publish it (replacing an equal name@version)."""
        failures: list[LoadFailure] = []
        entry = self._load(version_dir, failures)
        with self._lock:
            if entry is None:
                self.failures.extend(failures)
                return None
            table = {n: dict(v) for n, v in self._snapshot.items()}
            table.setdefault(entry.name, {})[entry.version] = entry
            self._publish(table)
        return entry

    def remove_version(self, name: str, version: str) -> bool:
        """Unpublish one version; in-flight requests keep the entry object they resolved."""
        with self._lock:
            table = {n: dict(v) for n, v in self._snapshot.items()}
            if table.get(name, {}).pop(version, None) is None:
                return False
            if not table[name]:
                del table[name]
            self._publish(table)
            return True

    def _publish(self, table: dict[str, dict[str, Entry]]) -> None:
        current = {n: vs[max(vs, key=version_key)] for n, vs in table.items() if vs}
        # Model names that the served manifests declare ("models": [...]) -> their name;
        # a name's current version speaks for it.
        aliases = {m: n for n, e in sorted(current.items())
                   for m in e.manifest.get("models") or () if isinstance(m, str)}
        # Assignments; a reader between them sees a consistent old or new `current`.
        self._snapshot = MappingProxyType(table)
        self._current = MappingProxyType(current)
        self._aliases = MappingProxyType(aliases)

    # ---- lookup -----------------------------------------------------------------
    def resolve(self, spec: str | None) -> Entry:
        """``None`` → the default; ``"name"`` → current version; ``"name@version"`` → that one.

        Raises:
            TokenizerNotFound: unknown name or version; details list what exists.
        """
        if spec is None:
            spec = self.default
            if spec is None:
                raise TokenizerNotFound("no tokenizer given and no default is configured",
                                        available=self.refs())
        name, version = split_ref(spec)
        if version is None:
            entry = self._current.get(name)
            if entry is not None:
                return entry
        else:
            entry = self._snapshot.get(name, {}).get(version)
            if entry is not None:
                return entry
            if name in self._snapshot:
                raise TokenizerNotFound(
                    f"tokenizer {shorten(name)!r} has no version {shorten(version)!r}; "
                    f"available versions: "
                    f"{sorted(self._snapshot[name], key=version_key)}",
                    tokenizer=spec,
                    available=self.refs(),
                )
        raise TokenizerNotFound(
            f"unknown tokenizer {shorten(spec)!r}; available: "
            f"{', '.join(self.refs()) or 'none'} "
            f"(pass \"tokenizer\": \"name\" or \"name@version\")",
            tokenizer=spec,
            available=self.refs(),
        )

    def lookup(self, tokenizer: str | None, model: str | None) -> tuple[Entry, str | None]:
        """The entry that serves a request, and the model name it was asked by (None when
        it named a tokenizer or nothing).

        ``model`` goes through the model table (tiktoken's names and prefixes, then the
        names served manifests declare; see ``tokserve.model_table``); a served tokenizer
        name is accepted too. ``tokenizer`` is a tokenizer name first and, when no
        tokenizer has that name, a model name.

        Raises:
            UnknownModel: ``model`` is not in the table (``suggestions``: close matches).
            TokenizerNotFound: no such tokenizer, or the model's tokenizer is not served.
        """
        if model is not None:
            name = resolve_model(model, dict(self._aliases))
            if name is None and model.partition("@")[0] in self._current:
                return self.resolve(model), model
            if name is None:
                suggestions = self._close_matches(model)
                raise UnknownModel(
                    f"unknown model {shorten(model)!r}"
                    + (f"; did you mean {', '.join(suggestions)}?" if suggestions else "")
                    + " (GET /models lists the model names; or pass \"tokenizer\")",
                    model=model, suggestions=suggestions)
            return self._serving(name, model), model
        try:
            return self.resolve(tokenizer), None
        except TokenizerNotFound as exc:
            name = resolve_model(tokenizer, dict(self._aliases)) if tokenizer else None
            if name is None or "@" in (tokenizer or ""):
                suggestions = self._close_matches(tokenizer or "")
                if suggestions:
                    exc.message += f"; did you mean {', '.join(suggestions)}?"
                    exc.details["suggestions"] = suggestions
                raise
            return self._serving(name, tokenizer), tokenizer

    def _serving(self, name: str, model: str) -> Entry:
        entry = self._current.get(name)
        if entry is None:
            raise TokenizerNotFound(
                f"model {shorten(model)!r} uses tokenizer {name!r}, which this server does "
                f"not serve (available: {', '.join(self.refs()) or 'none'}); import it "
                f"with `tokserve artifact import` and add its root",
                tokenizer=name, model=model, available=self.refs())
        return entry

    def _close_matches(self, wanted: str) -> list[str]:
        exact, _ = tiktoken_table()
        known = sorted({*exact, *self._aliases, *self._current})
        return difflib.get_close_matches(wanted, known, n=5, cutoff=0.6)

    def models(self) -> dict[str, Any]:
        """The model table as GET /models lists it: every exact name and prefix, the
        tokenizer each maps to, and whether that tokenizer is served here."""
        exact, prefixes = tiktoken_table()
        current = self._current
        rows = [{"model": m, "tokenizer": n, "source": "tiktoken", "served": n in current}
                for m, n in exact.items()]
        rows += [{"model": m, "tokenizer": n, "source": "manifest", "served": True}
                 for m, n in self._aliases.items() if m not in exact]
        return {"models": sorted(rows, key=lambda r: r["model"]),
                "prefixes": [{"prefix": p, "tokenizer": n, "served": n in current}
                             for p, n in prefixes.items()]}

    def entries(self) -> list[Entry]:
        """Every loaded version, sorted by name then version."""
        snap = self._snapshot
        return [snap[n][v] for n in sorted(snap) for v in sorted(snap[n], key=version_key)]

    def refs(self) -> list[str]:
        return [e.ref for e in self.entries()]

    def __len__(self) -> int:
        return sum(len(v) for v in self._snapshot.values())
