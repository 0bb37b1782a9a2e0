"""Post-processor stage: BOS/EOS and other template ids around an encoded text.

Applied only when the caller asks for ``add_special_tokens``. Ids it adds are not in the
text, so their byte spans are empty: BOS at the start, EOS at the end.
A ``tokenizer.json`` TemplateProcessing (single sequence) is followed as written;
ByteLevel post-processing changes only offsets trimming, never ids. Without a
template, the artifact's ``add_bos_token`` / ``add_eos_token`` flags decide.

Truncation to a token budget lives here too, because what it must keep is what this
stage added: ``truncate`` cuts the text's own tokens and keeps the prefix and suffix
while there is room for them.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from ..errors import ArtifactError, UnsupportedArtifact

#: which end of the text's own tokens truncation removes: ``right`` keeps the start
Side = Literal["right", "left"]
T = TypeVar("T")


class PostProcessor:
    """Immutable: the ids to put before and after an encoded single sequence."""

    def __init__(self, spec: dict[str, Any] | None, specials: dict[str, int],
                 bos: str | None, eos: str | None, add_bos: bool, add_eos: bool) -> None:
        self.prefix: list[int] = []
        self.suffix: list[int] = []
        template = _find_template(spec)
        if template is not None:
            self._from_template(template)
            return
        for flag, literal, target in ((add_bos, bos, self.prefix), (add_eos, eos, self.suffix)):
            if flag:
                if literal not in specials:
                    raise ArtifactError(f"add_bos/add_eos set but {literal!r} is not a token")
                target.append(specials[literal])

    def _from_template(self, template: dict[str, Any]) -> None:
        known = {k: v["ids"] for k, v in template.get("special_tokens", {}).items()}
        seen_sequence = False
        for item in template.get("single", []):
            if "Sequence" in item:
                if item["Sequence"].get("id", "A") != "A":
                    raise UnsupportedArtifact("TemplateProcessing single with a pair sequence")
                seen_sequence = True
            elif "SpecialToken" in item:
                name = item["SpecialToken"]["id"]
                if name not in known:
                    raise ArtifactError(f"TemplateProcessing names unknown special {name!r}")
                (self.suffix if seen_sequence else self.prefix).extend(known[name])

    def apply(self, ids: list[int]) -> list[int]:
        if not (self.prefix or self.suffix):
            return ids
        return self.prefix + ids + self.suffix

    def apply_spans(self, spans: list[int], end: int) -> list[int]:
        return [0, 0] * len(self.prefix) + spans + [end, end] * len(self.suffix)

    @property
    def added(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def truncate(self, seq: list[T], max_tokens: int, side: Side, added: bool) -> list[T]:
        """``seq`` (per-token values of ONE text: ids, offsets or token strings; with the
        prefix and suffix in it when ``added``) cut to ``max_tokens``.

        The text's own tokens go, from the end (``right``) or the start (``left``); the
        prefix and suffix stay while there is room for both, and when there is not, the
        sequence as a whole is cut from that side. A sequence within budget is returned
        as it is.
        """
        if len(seq) <= max_tokens:
            return seq
        before, after = (len(self.prefix), len(self.suffix)) if added else (0, 0)
        if max_tokens < before + after:
            return seq[:max_tokens] if side == "right" else seq[len(seq) - max_tokens:]
        keep = max_tokens - before - after
        body = seq[before:len(seq) - after]
        body = body[:keep] if side == "right" else body[len(body) - keep:]
        return seq[:before] + body + seq[len(seq) - after:]


def _find_template(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    if spec.get("type") == "TemplateProcessing":
        return spec
    if spec.get("type") == "Sequence":
        found = [t for t in map(_find_template, spec.get("processors", [])) if t is not None]
        if len(found) > 1:
            raise UnsupportedArtifact("more than one TemplateProcessing in a Sequence")
        return found[0] if found else None
    return None
