"""``tokserve artifact import|verify|list`` and ``tokserve train``, run as a user would.

Every command runs in a subprocess through ``python -m tokserve.service`` (the same entry point
as the ``tokserve`` script), on the repo's bundled files, or on ../shared files that
skip naming the file when absent. The imported artifact is then loaded by the engine
and compared with the reference library on real text.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from shared_files import shared_file

import tokserve

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "artifacts"
TEXTS = ["hello world", "  spaces\tand\ttabs\n\n", "naïve café 東京 😀👍🏽 1234567",
         "<|endoftext|> is text here", "def f(x):\n    return x ** 2\n"]


def run_cli(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokserve.service", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


def imported(tmp_path: Path, source: Path, name: str, *extra: str) -> tuple[Path, str]:
    out = run_cli("artifact", "import", source, "--name", name, "--version", "1",
                   "--out", tmp_path, *extra)
    assert out.returncode == 0, out.stderr
    directory, digest = out.stdout.split()
    assert Path(directory) == tmp_path / name / "1"
    return Path(directory), digest


def test_import_rank_file_with_preset_prints_the_hash_and_matches_tiktoken(tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    directory, digest = imported(tmp_path, BUNDLED / "cl100k_base/1/cl100k_base.tiktoken",
                                 "team-cl100k", "--preset", "cl100k_base")
    tok = tokserve.load(str(directory))
    assert tok.hash == digest
    from tiktoken.load import load_tiktoken_bpe  # the reference, from the same local file

    manifest = json.loads((directory / "manifest.json").read_text())
    ref = tiktoken.Encoding("cl", pat_str=manifest["pattern"],
                            mergeable_ranks=load_tiktoken_bpe(
                                str(directory / "cl100k_base.tiktoken")),
                            special_tokens=manifest["special_tokens"])
    for text in TEXTS:
        assert tok.encode(text, special_tokens="text") == ref.encode_ordinary(text)


def test_import_hf_directory_matches_tokenizers(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    source = BUNDLED / "deepseek-v4/1"
    directory, digest = imported(tmp_path, source, "team-ds")
    tok = tokserve.load(str(directory))
    assert tok.hash == digest
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["chat_templates"], "the config's chat template travels with the import"
    ref = tokenizers.Tokenizer.from_file(str(source / "tokenizer.json"))
    for text in TEXTS:
        assert tok.encode(text, special_tokens="allow") == \
            ref.encode(text, add_special_tokens=False).ids


def test_import_tekken_matches_mistral_common(tmp_path):
    source = shared_file("artifacts/mistral-tekken/tekken_240718.json")
    mistral = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
    directory, digest = imported(tmp_path, source, "team-tekken")
    tok = tokserve.load(str(directory))
    assert tok.hash == digest
    ref = mistral.Tekkenizer.from_file(str(source))
    for text in TEXTS:
        assert tok.encode(text, special_tokens="text") == ref.encode(text, bos=False, eos=False)


def test_verify_accepts_intact_and_names_the_tampered_file(tmp_path):
    directory, digest = imported(tmp_path, BUNDLED / "o200k_base/1/o200k_base.tiktoken",
                                 "team-o200k", "--preset", "o200k_base")
    ok = run_cli("artifact", "verify", directory)
    assert ok.returncode == 0 and digest in ok.stdout
    rank_file = directory / "o200k_base.tiktoken"
    data = bytearray(rank_file.read_bytes())
    data[100] ^= 0x01  # one edited byte
    rank_file.write_bytes(bytes(data))
    bad = run_cli("artifact", "verify", directory)
    assert bad.returncode == 2
    assert "o200k_base.tiktoken" in bad.stderr and "sha256" in bad.stderr


def test_import_refuses_to_overwrite_a_version_and_bad_sources(tmp_path):
    src = BUNDLED / "cl100k_base/1/cl100k_base.tiktoken"
    imported(tmp_path, src, "once", "--preset", "cl100k_base")
    again = run_cli("artifact", "import", src, "--name", "once", "--version", "1",
                     "--out", tmp_path, "--preset", "cl100k_base")
    assert again.returncode == 2 and "Traceback" not in again.stderr
    no_preset = run_cli("artifact", "import", src, "--name", "x", "--version", "1",
                         "--out", tmp_path)
    assert no_preset.returncode == 2 and "preset" in no_preset.stderr


def test_list_shows_bundled_and_extra_roots(tmp_path):
    imported(tmp_path, BUNDLED / "cl100k_base/1/cl100k_base.tiktoken", "listed",
             "--preset", "cl100k_base")
    out = run_cli("artifact", "list", "--artifacts", BUNDLED, "--artifacts", tmp_path)
    assert out.returncode == 0
    refs = [line.split("\t")[0] for line in out.stdout.splitlines()]
    assert {"o200k_base@1", "cl100k_base@1", "deepseek-v4@1", "listed@1"} <= set(refs)


def test_train_through_the_cli_gives_a_verifiable_loadable_artifact(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(("the quick brown fox jumps over the lazy dog. " * 50 +
                       "<|endoftext|>" + "naïve café 東京 " * 30) * 4, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "tokserve.service", "train", "--corpus", str(corpus), "--vocab-size",
         "300", "--special-tokens", "<|endoftext|>", "--pattern", "cl100k_base", "--name",
         "tiny", "--version", "1", "--out", str(tmp_path / "root"), "--no-progress",
         "--workers", "1"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    directory, digest = out.stdout.split()
    assert run_cli("artifact", "verify", directory).returncode == 0
    tok = tokserve.load(directory)
    assert tok.hash == digest and tok.vocab_size == 300
    text = "the lazy fox<|endoftext|>東京"
    ids = tok.encode(text, special_tokens="allow")
    assert tok.decode(ids) == text and tok.special_tokens["<|endoftext|>"] in ids


# ==== import with a chat template (issue: "rank-file and tekken imports cannot carry one") ===

NEMO_CHATS = [
    [{"role": "user", "content": "Hi!"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"},
     {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Name a prime."}],
    [{"role": "user", "content": "日本語で 🦀"}, {"role": "assistant", "content": "はい。"},
     {"role": "user", "content": "  spaces\tand\ttabs\n"}],
]


def _mistral_common_chat(tekken: Path, messages: list[dict]) -> tuple[list[int], str]:
    """mistral-common's own encoding of a chat (its instruct tokenizer for tekken): the
    ids, and their text with the control tokens kept."""
    pytest.importorskip("mistral_common")
    from mistral_common.protocol.instruct.messages import (AssistantMessage, SystemMessage,
                                                           UserMessage)
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    kinds = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}
    request = ChatCompletionRequest(messages=[kinds[m["role"]](content=m["content"])
                                              for m in messages])
    tokenizer = MistralTokenizer.from_file(str(tekken))
    tokens = tokenizer.encode_chat_completion(request).tokens
    return tokens, tokenizer.decode(tokens, special_token_policy=SpecialTokenPolicy.KEEP)


@pytest.mark.parametrize("index", range(len(NEMO_CHATS)))
def test_tekken_imported_with_a_template_renders_like_transformers_and_mistral_common(
        tmp_path_factory, live_server, index):
    tekken = shared_file("artifacts/mistral-tekken/tekken_240718.json")
    template = shared_file("templates/mistral-nemo.jinja")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    root = tmp_path_factory.mktemp("nemo")
    imported(root, tekken, "nemo", "--chat-template", template,
             "--models", "mistralai/Mistral-Nemo-Instruct-2407")
    from tokserve.service.runtime.settings import Settings

    messages = NEMO_CHATS[index]
    with live_server(Settings(_env_file=None, artifacts=[root])) as srv:
        r = srv.client.post("/render_chat", json={
            "model": "mistralai/Mistral-Nemo-Instruct-2407", "messages": messages})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tokenizer"] == "nemo@1"
    reference = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer.from_file(
            str(shared_file("artifacts/deepseek-v4/tokenizer.json"))),
        bos_token="<s>", eos_token="</s>")
    source = template.read_text(encoding="utf-8")
    assert body["text"] == reference.apply_chat_template(messages, chat_template=source,
                                                         tokenize=False)
    ids, text = _mistral_common_chat(tekken, messages)
    assert body["ids"] == ids and body["text"] == text


def test_rank_file_imported_with_a_named_template(tmp_path):
    qwen = shared_file("artifacts/qwen/qwen.tiktoken")
    template = shared_file("templates/qwen2.5.jinja")
    directory, _ = imported(tmp_path, qwen, "qwen-chat", "--preset", "qwen",
                            "--chat-template", template, "--template-name", "qwen2.5")
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["default_chat_template"] == "qwen2.5"  # its only template
    assert manifest["chat_templates"]["qwen2.5"]["file"] == "chat_template.qwen2.5.jinja"
    out = run_cli("artifact", "verify", directory)
    assert out.returncode == 0, out.stderr
    from conformance.references import get_pair
    from tokserve.service.operations.chat import render_chat

    tok = tokserve.load(str(directory))
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "日本語?"}]
    r = render_chat(tok, template.read_text(encoding="utf-8"), messages=messages,
                    add_generation_prompt=True)
    assert r.ids == get_pair("qwen").ref.encode(r.text, policy="allow")


def test_hf_import_adds_a_template_beside_its_own(tmp_path):
    extra = tmp_path / "terse.jinja"
    extra.write_text("{% for m in messages %}{{ m.content }}{% endfor %}", encoding="utf-8")
    directory, _ = imported(tmp_path / "out", BUNDLED / "deepseek-v4/1", "ds", "--chat-template",
                            extra, "--template-name", "terse")
    manifest = json.loads((directory / "manifest.json").read_text())
    assert set(manifest["chat_templates"]) == {"default", "terse"}
    assert manifest["default_chat_template"] == "default"  # the directory's own stays


def test_import_refuses_a_missing_template_file(tmp_path):
    out = run_cli("artifact", "import", BUNDLED / "cl100k_base/1/cl100k_base.tiktoken",
                  "--name", "x", "--version", "1", "--out", tmp_path, "--preset",
                  "cl100k_base", "--chat-template", tmp_path / "nope.jinja")
    assert out.returncode == 2 and "nope.jinja" in out.stderr
    assert not (tmp_path / "x").exists()
