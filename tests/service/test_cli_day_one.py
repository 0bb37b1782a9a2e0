"""What a user meets the first time they type ``tokserve`` (issue 32, "day one"), run
as they run it: the installed console script in a subprocess.

* a model name works where a tokenizer is expected (``--tokenizer gpt-4o``, as the
  service's ``tokenizer`` field), and ``--model`` resolves as the ``model`` field;
* errors name the flags to type (``--special-tokens allow``), not the HTTP fields;
* ``decode`` ends its text with a newline (``-n`` for the text alone);
* every ``serve`` flag's help says its default and its ``TOKSERVE_*`` variable, and the
  defaults it states are the ``Settings`` defaults; no help shows reST markup;
* a taken port is one error line and a non-zero exit, never "serving N tokenizers".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tokserve.service.runtime.settings import Settings

TOKSERVE = shutil.which("tokserve", path=str(Path(sys.executable).parent)) or "tokserve"
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    """The installed console script with no ``TOKSERVE_*`` variable inherited."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("TOKSERVE_") or k == "TOKSERVE_TABLES_DIR"}
    environ.update(env or {})
    return subprocess.run([TOKSERVE, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=environ)


# ---- 1. a model name where a tokenizer is expected ---------------------------------------

@pytest.mark.parametrize("command", ["count", "encode", "decode"])
def test_tokenizer_flag_takes_a_model_name_as_the_service_does(command, o200k):
    given = "24912 2375" if command == "decode" else "hello world"
    by_tokenizer = run(command, given, "--tokenizer", "o200k_base")
    for flags in (["--tokenizer", "gpt-4o"], ["--model", "gpt-4o"],
                  ["--tokenizer", "gpt-4o-2024-08-06"],  # tiktoken's prefix rule
                  ["--model", "o200k_base"]):             # `model` takes a tokenizer too
        done = run(command, given, *flags)
        assert (done.returncode, done.stderr) == (0, ""), flags
        assert done.stdout == by_tokenizer.stdout, flags
    assert by_tokenizer.stdout == {"count": "2\n", "encode": "[24912, 2375]\n",
                                   "decode": "hello world\n"}[command]


def test_model_names_from_a_manifest_and_the_table_pick_their_tokenizer():
    # openai/gpt-oss-20b is declared by the bundled o200k_harmony manifest; gpt-4 is
    # cl100k_base in tiktoken's table
    harmony = run("encode", "<|start|>", "--model", "openai/gpt-oss-20b",
                  "--special-tokens", "allow")
    assert (harmony.returncode, harmony.stdout) == (0, "[200006]\n"), harmony.stderr
    cl100k = run("count", "hello world", "--model", "gpt-4")
    assert (cl100k.returncode, cl100k.stdout) == (0, "2\n")
    assert run("encode", "hi", "--model", "gpt-4").stdout == \
        run("encode", "hi", "--tokenizer", "cl100k_base").stdout


def test_unknown_names_say_what_exists_and_exit_2():
    done = run("count", "x", "--model", "gpt4o")
    assert done.returncode == 2
    assert done.stderr.startswith("tokserve: error: unknown_model: unknown model 'gpt4o'")
    assert "did you mean gpt-4o" in done.stderr and done.stderr.count("\n") == 1
    done = run("count", "x", "--tokenizer", "gpt4o")
    assert done.returncode == 2 and "tokenizer_not_found" in done.stderr
    assert "did you mean gpt-4o" in done.stderr and "o200k_base" in done.stderr
    done = run("count", "x", "--tokenizer", "o200k_base", "--model", "gpt-4o")
    assert done.returncode == 2 and "not allowed with" in done.stderr


def test_help_says_how_tokenizer_and_model_are_resolved():
    text = " ".join(run("count", "--help").stdout.split())
    assert "--tokenizer NAME" in text and "--model MODEL" in text
    assert "a model name (gpt-4o) is accepted too when no tokenizer has that name" in text
    assert "resolved as the service's \"model\" field" in text


# ---- 2. errors in the command line's words -----------------------------------------------

def test_errors_name_the_flags_not_the_http_fields():
    done = run("count", "<|endoftext|>")
    assert done.returncode == 2
    assert "--special-tokens allow" in done.stderr and "--special-tokens text" in done.stderr
    assert "special_tokens=" not in done.stderr
    done = run("encode", "a <|endoftext|>", "--offsets", "char")
    assert done.returncode == 2 and "--special-tokens allow" in done.stderr
    done = run("decode", "--errors", "strict", "94")  # o200k_base 94: a lone 0xFF byte
    assert done.returncode == 2 and "invalid_utf8" in done.stderr
    assert "--errors replace" in done.stderr and 'errors="' not in done.stderr
    # the advice, typed as printed, works
    assert run("count", "<|endoftext|>", "--special-tokens", "allow").stdout == "1\n"
    done = run("decode", "12", "abc")
    assert done.returncode == 2 and "integers separated by spaces or a JSON list" in done.stderr


# ---- 3. decode prints a newline ----------------------------------------------------------

def test_decode_prints_the_text_and_one_newline(o200k):
    for text in ("hello world", "line\n", "", "東京 😀\t"):
        ids = o200k.encode(text)
        by_args = run("decode", *map(str, ids))
        by_stdin = run("decode", stdin=json.dumps(ids))
        assert by_args.stdout == by_stdin.stdout == text + "\n", text
        raw = run("decode", "-n", *map(str, ids))
        assert raw.stdout == text and run("decode", "--no-newline", stdin=json.dumps(ids)
                                          ).stdout == text


# ---- 4. help -----------------------------------------------------------------------------

def _serve_flags(help_text: str) -> dict[str, str]:
    """``--flag`` -> its help text (joined lines) from argparse's help output."""
    flags: dict[str, str] = {}
    current = None
    for line in help_text.split("options:", 1)[1].split("\n\n", 1)[0].splitlines():
        match = re.match(r"\s{2}(--[a-z-]+)", line)
        if match:
            current = match.group(1)
            flags[current] = line
        elif current:
            flags[current] += " " + line.strip()
    flags.pop("--help", None)
    return {flag: " ".join(text.split()) for flag, text in flags.items()}


#: what the help states as each flag's default -> the Settings field it must equal
_SETTING_DEFAULTS = {
    "--default-tokenizer": ("default_tokenizer", "o200k_base"),
    "--log-level": ("log_level", "info"),
    "--drain-seconds": ("drain_seconds", "5"),
    "--graceful-timeout": ("graceful_timeout", "20"),
    "--header-timeout": ("header_timeout", "10"),
    "--body-timeout": ("body_timeout", "30"),
    "--max-body-bytes": ("max_body_bytes", "16777216"),
    "--max-text-chars": ("max_text_chars", "4000000"),
    "--max-batch": ("max_batch", "4096"),
    "--max-decode-ids": ("max_decode_ids", "4000000"),
}


def test_every_serve_flag_states_its_default_and_its_variable():
    done = run("serve", "--help")
    assert done.returncode == 0
    flags = _serve_flags(done.stdout)
    for flag in ("--host", "--port", "--workers", "--default-tokenizer", "--log-level",
                 "--artifacts", "--drain-seconds", "--cors-origins", "--max-batch"):
        assert flag in flags, flags
    settings = Settings(_env_file=None)
    for flag, text in flags.items():
        assert "default: " in text, (flag, text)
        variable = re.search(r"env (TOKSERVE_[A-Z_]+)", text)
        assert variable, (flag, text)
        field = variable.group(1).removeprefix("TOKSERVE_").lower()
        assert field in Settings.model_fields or field in {"host", "port", "workers"}, flag
        if flag in _SETTING_DEFAULTS:
            name, stated = _SETTING_DEFAULTS[flag]
            assert f"default: {stated}" in text, (flag, text)
            assert str(getattr(settings, name)).removesuffix(".0") == stated, flag
    assert "default: 127.0.0.1; env TOKSERVE_HOST" in flags["--host"]
    assert "default: 8000; env TOKSERVE_PORT" in flags["--port"]
    assert "default: 1; env TOKSERVE_WORKERS" in flags["--workers"]


def test_a_serve_flag_sets_the_variable_it_names(tmp_path):
    """What the help says (a flag sets TOKSERVE_X) is what happens: the server started
    with ``--max-batch 3`` refuses a batch of 4, as with ``TOKSERVE_MAX_BATCH=3``."""
    from servers import ServerProcess

    with ServerProcess("--max-batch", "3") as srv:
        r = srv.client.post("/count", json={"texts": ["a", "b", "c", "d"]})
        assert r.status_code == 413, r.text


def test_help_is_plain_text():
    for args in ([], ["serve"], ["count"], ["decode"], ["artifact"]):
        done = run(*args, "--help")
        assert done.returncode == 0, args
        assert "``" not in done.stdout, (args, done.stdout)
    top = run("--help").stdout
    assert top.splitlines()[2].startswith("tokserve: serve the HTTP API")
    assert "tokserve count  [TEXT ...]" in top  # the synopsis, as plain text


# ---- 8. a taken port ---------------------------------------------------------------------

@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_taken_port_is_one_error_line_and_no_start(workers, log_format):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("serve", "--port", str(port), "--workers", workers, "--log-level", "info",
                   "--log-format", log_format, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # nothing loaded, nothing "serving", no worker
    line = lines[0]
    if log_format == "json":
        record = json.loads(line)
        assert record["level"] == "ERROR"
        line = record["message"]
    assert f"cannot listen on 127.0.0.1:{port}: address already in use" in line
    assert "--port" in line
