"""The tiktoken shim (tokserve.tiktoken_shim) against the real tiktoken package.

What is checked, each against tiktoken itself (installed by the [test] extra):

* in a fresh interpreter, by each of the three ways in (the call, ``python -m``,
  ``PYTHONPATH``), ``import tiktoken`` and its submodules are tokserve's;
* langchain's ``TokenTextSplitter`` cuts the same chunks under the shim as under
  tiktoken (two subprocesses, compared);
* ``tiktoken_ext.openai_public``'s constructors return tiktoken's keyword arguments from
  the bundled files, and ``Encoding(**those)`` encodes as tiktoken's does;
* ``Encoding(**kwargs)`` after ``_pat_str``/``_mergeable_ranks`` of another encoding (the
  way tiktoken documents adding special tokens) equals tiktoken's (patterns that no
  scanner knows: tests/engine/pre_tokenizers/test_tiktoken_exactness.py);
* ``tiktoken.load``, ``registry`` and ``model`` follow tiktoken's rules; a plugin another
  package installs into ``tiktoken_ext`` is found; a process that imported the real
  tiktoken is refused and keeps working.

tiktoken's own encodings are read from a private download cache holding the bundled rank
files under tiktoken's cache keys (tiktoken checks its pinned SHA-256): no network.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import hypothesis
import hypothesis.strategies as st
import pytest
import tiktoken
import tiktoken.load
import tiktoken.model
import tiktoken_ext.openai_public as real_public

import tokserve
from conformance.references import env_int
from corpus import build_corpus
from tokserve.errors import ArtifactError
from tokserve.tiktoken_shim import load as shim_load
from tokserve.tiktoken_shim import model as shim_model
from tokserve.tiktoken_shim import openai_public as shim_public
from tokserve.tiktoken_shim import registry as shim_registry

REPO = Path(__file__).resolve().parents[2]
MAX_EXAMPLES = env_int("TOKSERVE_HYPOTHESIS_MAX_EXAMPLES", 200)
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
OPENAI = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base",
          "o200k_harmony")


def _rank_file(name: str) -> Path:
    directory = tokserve.bundled_root() / name / "1"
    manifest = json.loads((directory / "manifest.json").read_text())
    return directory / manifest["tokenizer_file"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """tiktoken's download cache, holding the bundled rank files under its keys."""
    folder = tmp_path_factory.mktemp("tiktoken-cache")
    for stem in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base"):
        key = hashlib.sha1(_BLOB.format(stem).encode()).hexdigest()
        shutil.copyfile(_rank_file(stem), folder / key)
    return folder


@pytest.fixture
def real_env(cache, monkeypatch):
    """tiktoken in this process reads OpenAI's files from the private cache."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TIKTOKEN_CACHE_DIR", "PYTHONSAFEPATH")}
    return {**env, **extra}


def _python(*args: str, cwd: Path, env: dict[str, str]) -> str:
    """Run a fresh interpreter; its stdout (it must succeed)."""
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _shim_path() -> str:
    return _python("-m", "tokserve.tiktoken_shim", "--pythonpath", cwd=REPO, env=_env()).strip()


def _texts() -> list[str]:
    """Multilingual, whitespace, digits, emoji, controls, recent Unicode (no code files)."""
    return [case.text for case in build_corpus(0)
            if not case.label.startswith(("code/", "long/"))]


# ============================================================ imports, three ways in

_IMPORTS = """
import json, sys
{prelude}
import tiktoken
from tiktoken.load import load_tiktoken_bpe
import tiktoken.core, tiktoken.registry, tiktoken.model
import tiktoken_ext.openai_public
import tokserve, tokserve.tiktoken_shim as shim
names = ("tiktoken.core", "tiktoken.load", "tiktoken.registry", "tiktoken.model",
         "tiktoken_ext.openai_public")
try:
    import tiktoken._tiktoken
    rust = "importable"
except ModuleNotFoundError:
    rust = "absent"
print(json.dumps({{
    "modules": {{n: sys.modules[n].__name__ for n in names}},
    "Encoding": tiktoken.Encoding is tiktoken.core.Encoding is tokserve.Encoding,
    "functions": [f.__module__ for f in (load_tiktoken_bpe, tiktoken.get_encoding,
                  tiktoken.encoding_for_model, tiktoken_ext.openai_public.cl100k_base)],
    "again": shim.install() is tiktoken and tokserve.install_as_tiktoken() is tiktoken,
    "version": tiktoken.__version__,
    "ids": tiktoken.get_encoding("cl100k_base").encode("hello world"),
    "model": tiktoken.encoding_for_model("gpt-4o").name,
    "rust": rust,
}}))
"""


@pytest.mark.parametrize("route", ["call", "-m", "PYTHONPATH"])
def test_fresh_interpreter_resolves_tiktoken_and_its_submodules_to_tokserve(route, tmp_path):
    script = tmp_path / "probe.py"
    prelude = "import tokserve; tokserve.install_as_tiktoken()" if route == "call" else ""
    script.write_text(_IMPORTS.format(prelude=prelude))
    env = _env(PYTHONPATH=_shim_path()) if route == "PYTHONPATH" else _env()
    args = ["-m", "tokserve.tiktoken_shim", str(script)] if route == "-m" else [str(script)]
    seen = json.loads(_python(*args, cwd=tmp_path, env=env))
    assert seen["modules"] == {
        "tiktoken.core": "tokserve.tiktoken_shim.core",
        "tiktoken.load": "tokserve.tiktoken_shim.load",
        "tiktoken.registry": "tokserve.tiktoken_shim.registry",
        "tiktoken.model": "tokserve.tiktoken_shim.model",
        "tiktoken_ext.openai_public": "tokserve.tiktoken_shim.openai_public",
    }
    assert seen["Encoding"] and seen["again"]
    assert all(m.startswith("tokserve.tiktoken_shim.") for m in seen["functions"])
    assert seen["version"] == f"0.14.0+tokserve.{tokserve.__version__}"
    assert seen["ids"] == [15339, 1917] and seen["model"] == "o200k_base"
    assert seen["rust"] == "absent"


def test_pythonpath_route_works_whichever_module_is_imported_first(tmp_path):
    code = ("import tiktoken_ext.openai_public as p, tiktoken.load as l, tiktoken; "
            "print(p.__name__, l.__name__, tiktoken.__version__)")
    out = _python("-c", code, cwd=tmp_path, env=_env(PYTHONPATH=_shim_path())).split()
    assert out[:2] == ["tokserve.tiktoken_shim.openai_public", "tokserve.tiktoken_shim.load"]
    assert "+tokserve." in out[2]


def test_dash_m_runs_modules_and_code_with_their_arguments_and_children_inherit(tmp_path):
    (tmp_path / "probe_mod.py").write_text(textwrap.dedent("""
        import subprocess, sys, tiktoken
        child = subprocess.run([sys.executable, "-c", "import tiktoken; print(tiktoken.__version__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
        print(__name__, sys.argv[1:], tiktoken.__version__, child)
    """))
    out = _python("-m", "tokserve.tiktoken_shim", "-m", "probe_mod", "a", "--b", cwd=tmp_path,
                  env=_env()).split()
    assert out[:3] == ["__main__", "['a',", "'--b']"]
    assert "+tokserve." in out[3] and out[4] == out[3]  # the child process got the shim too
    code = "import sys, tiktoken; print(sys.argv, tiktoken.encoding_name_for_model('gpt-4'))"
    out = _python("-m", "tokserve.tiktoken_shim", "-c", code, "x", cwd=tmp_path, env=_env())
    assert out.split() == ["['-c',", "'x']", "cl100k_base"]


def test_install_refuses_a_process_that_imported_the_real_tiktoken(tmp_path, cache):
    code = textwrap.dedent("""
        import json, sys, tiktoken
        real = tiktoken
        import tokserve
        try:
            tokserve.install_as_tiktoken()
            raise SystemExit("installed over the real tiktoken")
        except tokserve.TiktokenAlreadyImported as e:
            error = e
        print(json.dumps({
            "runtime": isinstance(error, RuntimeError), "modules": error.details["modules"],
            "message": str(error), "unchanged": sys.modules["tiktoken"] is real,
            "ids": real.get_encoding("cl100k_base").encode("hello world"),
            "still_real": real.Encoding is not tokserve.Encoding,
        }))
    """)
    seen = json.loads(_python("-c", code, cwd=tmp_path, env=_env(TIKTOKEN_CACHE_DIR=str(cache))))
    assert seen["runtime"] and seen["unchanged"] and seen["still_real"]
    assert "tiktoken" in seen["modules"] and "tiktoken.core" in seen["modules"]
    assert "python -m tokserve.tiktoken_shim" in seen["message"]
    assert seen["ids"] == [15339, 1917]


# ============================================================ a library you do not own

_SPLITTER = """
import json, tiktoken
from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter
text = open({path!r}, encoding="utf-8").read()
chunks = {{name: TokenTextSplitter(encoding_name=name, chunk_size=48, chunk_overlap=8
                                  ).split_text(text)
          for name in ("cl100k_base", "o200k_base", "p50k_base")}}
chunks["gpt-4o"] = TokenTextSplitter(model_name="gpt-4o", chunk_size=100, chunk_overlap=0
                                     ).split_text(text)
chunks["recursive"] = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
    encoding_name="cl100k_base", chunk_size=60, chunk_overlap=10).split_text(text)
print(json.dumps({{"version": tiktoken.__version__, "chunks": chunks}}))
"""


def test_langchain_token_text_splitter_cuts_the_same_chunks_as_with_tiktoken(tmp_path, cache):
    import langchain_text_splitters  # noqa: F401 - the [test] extra's; fail, not skip
    from corpus.scripts import SENTENCES

    source = tmp_path / "text.txt"
    source.write_text("\n\n".join(SENTENCES * 3) + " 😀👍🏽 x = 12345;\n\t  end  ", encoding="utf-8")
    script = tmp_path / "split.py"
    script.write_text(_SPLITTER.format(path=str(source)))
    real = json.loads(_python(str(script), cwd=tmp_path, env=_env(TIKTOKEN_CACHE_DIR=str(cache))))
    shim = json.loads(_python("-m", "tokserve.tiktoken_shim", str(script), cwd=tmp_path,
                              env=_env()))
    assert "+tokserve" not in real["version"] and "+tokserve" in shim["version"]
    assert all(len(chunks) > 5 for chunks in real["chunks"].values())
    assert shim["chunks"] == real["chunks"]


def test_a_plugin_another_package_installs_is_found_as_tiktoken_finds_it(tmp_path, cache):
    plugins = tmp_path / "plugins" / "tiktoken_ext"
    plugins.mkdir(parents=True)
    (plugins / "acme.py").write_text(textwrap.dedent(f"""
        from tiktoken.load import load_tiktoken_bpe

        def acme_base():
            return {{"name": "acme_base", "pat_str": r"\\p{{L}}+|\\p{{N}}|[^\\p{{L}}\\p{{N}}]+",
                    "mergeable_ranks": load_tiktoken_bpe({str(_rank_file('r50k_base'))!r}),
                    "special_tokens": {{"<|acme|>": 50257}}}}

        ENCODING_CONSTRUCTORS = {{"acme_base": acme_base}}
    """))
    code = ("import json, tiktoken; enc = tiktoken.get_encoding('acme_base'); "
            "print(json.dumps([sorted(tiktoken.list_encoding_names()), "
            "[enc.encode(t, allowed_special='all') for t in "
            "['Grüße, 2024!<|acme|>  x', '日本語 テキスト\\n\\n 12']]]))")
    folder = str(tmp_path / "plugins")
    real = json.loads(_python("-c", code, cwd=tmp_path,
                              env=_env(PYTHONPATH=folder, TIKTOKEN_CACHE_DIR=str(cache))))
    shim = json.loads(_python("-m", "tokserve.tiktoken_shim", "-c", code, cwd=tmp_path,
                              env=_env(PYTHONPATH=folder)))
    assert "acme_base" in real[0] and set(real[0]) <= set(shim[0])
    assert shim[1] == real[1] and 50257 in real[1][0]


# ============================================================ openai_public and Encoding

@pytest.mark.parametrize("name", OPENAI)
def test_openai_public_constructors_return_tiktokens_kwargs_from_bundled_files(name, real_env):
    ours = getattr(shim_public, name)()
    # tiktoken builds gpt2 from GPT-2's vocab.bpe/encoder.json (not bundled): the same
    # ranks, pattern and special token as r50k_base, under its own name
    theirs = real_public.r50k_base() | {"name": "gpt2"} if name == "gpt2" else \
        getattr(real_public, name)()
    assert ours == theirs
    assert shim_public.ENCODING_CONSTRUCTORS.keys() == real_public.ENCODING_CONSTRUCTORS.keys()
    for constant in ("ENDOFTEXT", "FIM_PREFIX", "FIM_MIDDLE", "FIM_SUFFIX", "ENDOFPROMPT",
                     "r50k_pat_str"):
        assert getattr(shim_public, constant) == getattr(real_public, constant)


@pytest.fixture(scope="module")
def built(cache):
    """name -> (Encoding(**shim constructor), tiktoken's Encoding(**its constructor))."""
    patch = pytest.MonkeyPatch()
    patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    try:
        yield {name: (tokserve.Encoding(**getattr(shim_public, name)()),
                      tiktoken.Encoding(**getattr(real_public, name)()))
               for name in ("p50k_edit", "cl100k_base", "o200k_base")}
    finally:
        patch.undo()


@pytest.mark.parametrize("name", ["p50k_edit", "cl100k_base", "o200k_base"])
def test_encoding_built_from_loaded_ranks_encodes_as_tiktoken(name, built):
    ours, theirs = built[name]
    bundled = tokserve.get_encoding(name)  # what the shim's get_encoding returns
    assert (ours.name, ours.n_vocab, ours.special_tokens_set) == \
        (theirs.name, theirs.n_vocab, theirs.special_tokens_set)
    texts = _texts()
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts) \
        == bundled.encode_ordinary_batch(texts)
    specials = [f"a{lit}b {lit}{lit}\n" for lit in sorted(theirs.special_tokens_set)]
    assert ours.encode_batch(specials, allowed_special="all") == \
        theirs.encode_batch(specials, allowed_special="all")


@hypothesis.settings(max_examples=MAX_EXAMPLES, deadline=None)
@hypothesis.given(st.text())
def test_encoding_built_from_loaded_ranks_matches_tiktoken_on_any_text(built, text):
    for ours, theirs in built.values():
        assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())


def test_cookbook_extension_of_an_encoding_equals_tiktokens(real_env):
    """tiktoken's README way of adding special tokens: a new Encoding from another's
    ``_pat_str``, ``_mergeable_ranks`` and ``_special_tokens``."""
    def extend(module):
        base = module.get_encoding("cl100k_base")
        return module.Encoding(
            name="cl100k_im", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
            special_tokens={**base._special_tokens, "<|im_start|>": 100264,
                            "<|im_end|>": 100265})

    ours, theirs = extend(_Namespace(shim_registry.get_encoding)), extend(tiktoken)
    text = "<|im_start|>user\nHallo, wie geht's? 你好<|im_end|>\n<|im_start|>assistant\n"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    assert ours.n_vocab == theirs.n_vocab and ours.special_tokens_set == theirs.special_tokens_set


class _Namespace:
    """``get_encoding`` and ``Encoding`` as the shim's ``tiktoken`` module has them."""

    def __init__(self, get_encoding):
        self.get_encoding, self.Encoding = get_encoding, tokserve.Encoding


# ============================================================ tiktoken.load

def test_load_tiktoken_bpe_reads_local_files_as_tiktoken_does(tmp_path, real_env):
    path = str(_rank_file("cl100k_base"))
    sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    assert shim_load.load_tiktoken_bpe(path, expected_hash=sha) == \
        tiktoken.load.load_tiktoken_bpe(path, expected_hash=sha)
    for module in (shim_load, tiktoken.load):
        with pytest.raises(ValueError, match="Hash mismatch"):
            module.load_tiktoken_bpe(path, expected_hash="0" * 64)
    broken = tmp_path / "broken.tiktoken"
    broken.write_bytes(base64.b64encode(b"ab") + b" 0\nnot-a-line\n")
    for module in (shim_load, tiktoken.load):
        with pytest.raises(ValueError, match="Error parsing line"):
            module.load_tiktoken_bpe(str(broken))
    dumped = tmp_path / "dumped.tiktoken"
    shim_load.dump_tiktoken_bpe(shim_load.load_tiktoken_bpe(path), str(dumped))
    assert dumped.read_bytes() == Path(path).read_bytes()


@pytest.mark.parametrize("url", [_BLOB.format("cl100k_base"), "https://example.com/x.tiktoken",
                                 "az://bucket/x.tiktoken"])
def test_a_url_is_refused_with_a_clear_error_and_never_fetched(url):
    with pytest.raises(ArtifactError, match="reads local files only") as caught:
        shim_load.load_tiktoken_bpe(url)
    assert ("bundled" in caught.value.message) == url.startswith("https://openaipublic")
    with pytest.raises(ArtifactError):
        shim_load.dump_tiktoken_bpe({b"a": 0}, url)


def test_data_gym_files_give_tiktokens_ranks(tmp_path, real_env):
    from tokserve.decoders.byte_level import bytes_to_unicode

    def gym(token: bytes) -> str:  # GPT-2's byte -> character map, as its files spell tokens
        return "".join(bytes_to_unicode()[b] for b in token)

    merges = [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b" ", b"w"), (b"\xc3", b"\xa9")]
    (tmp_path / "vocab.bpe").write_text(
        "#version: 0.2\n" + "".join(f"{gym(a)} {gym(b)}\n" for a, b in merges), encoding="utf-8")
    ranks = {bytes([b]): i for i, b in enumerate(sorted(range(256), key=lambda b: (
        not (chr(b).isprintable() and chr(b) != " "), b)))}
    ranks.update({a + b: 256 + i for i, (a, b) in enumerate(merges)})
    encoder = {gym(token): rank for token, rank in ranks.items()} | {"<|endoftext|>": 261}
    (tmp_path / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    args = (str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json"))
    assert shim_load.data_gym_to_mergeable_bpe_ranks(*args) == \
        tiktoken.load.data_gym_to_mergeable_bpe_ranks(*args) == ranks
    # another file name: tiktoken caches even local files, by path
    (tmp_path / "wrong.json").write_text(json.dumps(encoder | {gym(b"he"): 999}))
    args = (args[0], str(tmp_path / "wrong.json"))
    with pytest.raises(AssertionError):  # tiktoken asserts; the shim raises ValueError
        tiktoken.load.data_gym_to_mergeable_bpe_ranks(*args)
    with pytest.raises(ValueError, match="does not match"):
        shim_load.data_gym_to_mergeable_bpe_ranks(*args)


# ============================================================ registry and model

def test_registry_follows_tiktokens_rules(monkeypatch):
    monkeypatch.setattr(shim_registry, "ENCODINGS", {})
    monkeypatch.setattr(shim_registry, "ENCODING_CONSTRUCTORS", None)
    assert shim_registry.get_encoding("cl100k_base") is tokserve.get_encoding("cl100k_base")
    assert shim_registry.ENCODINGS == {"cl100k_base": tokserve.get_encoding("cl100k_base")}
    assert list(shim_registry.ENCODING_CONSTRUCTORS) == list(OPENAI)
    assert set(OPENAI) | {"deepseek-v4"} <= set(shim_registry.list_encoding_names())
    with pytest.raises(ValueError, match="Unknown encoding nope"):
        shim_registry.get_encoding("nope")
    with pytest.raises(ValueError, match="Expected a string"):
        shim_registry.get_encoding(7)
    # registering an encoding the way code written for tiktoken does
    kwargs = shim_public.p50k_edit() | {"name": "mine", "special_tokens": {"<|x|>": 50284}}
    shim_registry.ENCODING_CONSTRUCTORS["mine"] = lambda: kwargs
    mine = shim_registry.get_encoding("mine")
    assert mine.encode("hi <|x|>", allowed_special="all") == [5303, 220, 50284]
    assert shim_registry.get_encoding("mine") is mine


def test_model_table_is_tiktokens_and_registering_a_model_works(monkeypatch):
    assert shim_model.MODEL_TO_ENCODING == tiktoken.model.MODEL_TO_ENCODING
    assert list(shim_model.MODEL_PREFIX_TO_ENCODING.items()) == \
        list(tiktoken.model.MODEL_PREFIX_TO_ENCODING.items())
    for model in ("gpt-4o", "gpt-4o-2024-08-06", "gpt-3.5-turbo-0301", "gpt-oss-20b",
                  "text-davinci-003", "ft:gpt-4o:org::id"):
        assert shim_model.encoding_name_for_model(model) == \
            tiktoken.model.encoding_name_for_model(model)
    # a name only a bundled manifest declares: tokserve knows it, tiktoken does not, and
    # code written for tiktoken may count on the KeyError
    assert tokserve.encoding_name_for_model("openai/gpt-oss-20b") == "o200k_harmony"
    for module in (shim_model, tiktoken.model):
        with pytest.raises(KeyError, match="Could not automatically map"):
            module.encoding_name_for_model("openai/gpt-oss-20b")
    monkeypatch.setitem(shim_model.MODEL_TO_ENCODING, "my-model", "p50k_base")
    assert shim_model.encoding_for_model("my-model").name == "p50k_base"
    assert tokserve.model_table.resolve_model("my-model") is None  # the engine's table kept


# ============================================================ the README

def test_readme_shim_example_runs_and_shows_what_it_prints(tmp_path):
    """The README's "Under a library you do not own" Python block, run as written in a
    fresh interpreter; each ``expression  # value`` line is checked to equal its value."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Under a library you do not own"):]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    checks = []
    for line in block.splitlines():
        code, _, comment = line.partition("  # ")
        try:
            value = ast.literal_eval(comment.split(";")[0].strip())
        except (ValueError, SyntaxError):
            continue
        checks.append(f"assert ({code.strip()}) == {value!r}, {code.strip()!r}")
    assert len(checks) >= 2
    script = tmp_path / "example.py"
    script.write_text(block + "\n" + "\n".join(checks) + "\n", encoding="utf-8")
    _python(str(script), cwd=tmp_path, env=_env())
