"""Where tests find real tokenizer files: ``../shared``, else the repo's bundled copy.

CI has ``../shared`` beside the clone; a user's fresh clone may not. The bundled
artifacts (``artifacts/<name>/1/``) hold byte-identical copies of some shared files
(their manifests pin the sha256), so tests on those run everywhere; a test that needs a
file the repo does not bundle (Llama 3, Qwen, tekken, the other templates) skips and
names the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

#: shared-relative path -> repo-relative bundled copy with the same bytes.
BUNDLED_COPIES = {
    "artifacts/openai/cl100k_base.tiktoken": "artifacts/cl100k_base/1/cl100k_base.tiktoken",
    "artifacts/openai/o200k_base.tiktoken": "artifacts/o200k_base/1/o200k_base.tiktoken",
    "artifacts/deepseek-v4/tokenizer.json": "artifacts/deepseek-v4/1/tokenizer.json",
    "artifacts/deepseek-v4/tokenizer_config.json": "artifacts/deepseek-v4/1/tokenizer_config.json",
    "templates/deepseek-v4.jinja": "artifacts/deepseek-v4/1/chat_template.jinja",
    "templates/gpt-oss.jinja": "artifacts/o200k_harmony/1/chat_template.jinja",
    "artifacts/mistral-v0.3/tokenizer.json": "artifacts/mistral-v0.3/1/tokenizer.json",
    "artifacts/phi3-mini/tokenizer.json": "artifacts/phi-3-mini/1/tokenizer.json",
    "artifacts/phi3-mini/tokenizer_config.json": "artifacts/phi-3-mini/1/tokenizer_config.json",
    "templates/phi3.5.jinja": "artifacts/phi-3-mini/1/chat_template.phi-3.5.jinja",
}


def find_shared(relative: str) -> Path | None:
    """``../shared/<relative>`` or its bundled copy, or None."""
    path = SHARED / relative
    if path.is_file():
        return path.resolve()
    copy = BUNDLED_COPIES.get(relative)
    if copy is not None and (REPO / copy).is_file():
        return REPO / copy
    return None


def shared_file(relative: str) -> Path:
    """Like ``find_shared`` but skips the calling test, naming the file, when absent."""
    path = find_shared(relative)
    if path is None:
        pytest.skip(f"needs ../shared/{relative} (not bundled in the repo; put the shared "
                    f"folder beside the clone to run this case)")
    return path
