"""A built image's memory (large_pages.h, ``Image`` in _bpe_image.pxi): read-only, at a
2 MiB boundary and advised into huge pages, freed with its last reference, and a
buffer that everything taking ``bytes`` takes."""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys

import pytest

import tokserve
from tokserve import tables
from tokserve.models.bpe._bpe import BpeModel, Image, build_image

LARGE = 2 << 20
# a kernel built without transparent huge pages refuses MADV_HUGEPAGE (the image works
# the same, in small pages); this file is where such a kernel shows it
THP = os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc/self/smaps")


def _address(buffer: object) -> int:
    """The address of ``buffer``'s memory, from the buffer protocol itself."""
    view = (ctypes.c_char * 256)()  # larger than any Py_buffer; its first field is the address
    ctypes.pythonapi.PyObject_GetBuffer(ctypes.py_object(buffer), view, 0)
    try:
        return ctypes.c_void_p.from_buffer(view).value or 0
    finally:
        ctypes.pythonapi.PyBuffer_Release(view)


def _mapping_at(address: int) -> dict[str, str] | None:
    """The /proc/self/smaps entry of the mapping that starts at ``address``."""
    entry: dict[str, str] | None = None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and ":" not in head[0]:
                start, end = (int(x, 16) for x in head[0].split("-"))
                if entry is not None:
                    return entry
                if start == address:
                    entry = {"size": str(end - start), "perms": head[1]}
            elif entry is not None:
                entry[head[0].rstrip(":")] = " ".join(head[1:])
    return entry


@pytest.fixture(scope="module")
def cl100k_image() -> Image:
    return tables.image_of(tokserve.get_encoding("cl100k_base").tokenizer.artifact)


@linux_only
def test_a_large_image_starts_on_a_huge_page_boundary_read_only_and_advised(cl100k_image):
    address = _address(cl100k_image)
    assert address % LARGE == 0
    mapping = _mapping_at(address)
    assert mapping is not None
    assert mapping["perms"] == "r--p"
    assert int(mapping["size"]) == -(-len(cl100k_image) // 4096) * 4096  # no page beyond it
    if THP:
        assert "hg" in mapping["VmFlags"].split()  # MADV_HUGEPAGE


def test_an_image_is_a_read_only_buffer_like_bytes(cl100k_image):
    view = memoryview(cl100k_image)
    assert view.readonly and view.format == "B" and len(view) == len(cl100k_image)
    with pytest.raises(TypeError):
        view[0:1] = b"x"
    copy = bytes(cl100k_image)
    assert copy[:6] == b"TOKBPE"
    assert hashlib.sha256(cl100k_image).digest() == hashlib.sha256(copy).digest()
    # a model reads the copy and the image alike
    piece = "hello world Привет 日本語 😀".encode()
    ends = [len(piece)]
    assert (BpeModel(image=copy).encode(piece, ends) ==
            BpeModel(image=cl100k_image).encode(piece, ends))


@linux_only
def test_a_write_into_an_image_faults_instead_of_changing_ids():
    code = ("import ctypes, tokserve\n"
            "from tokserve import tables\n"
            "image = tables.image_of(tokserve.get_encoding('gpt2').tokenizer.artifact)\n"
            "view = (ctypes.c_char * 256)()\n"
            "ctypes.pythonapi.PyObject_GetBuffer(ctypes.py_object(image), view, 0)\n"
            "ctypes.memset(ctypes.c_void_p.from_buffer(view).value + 100, 0, 1)\n"
            "print('written')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == -11, (done.returncode, done.stdout, done.stderr[-500:])  # SIGSEGV
    assert "written" not in done.stdout


@linux_only
def test_an_image_is_unmapped_with_its_last_reference():
    image = build_image([(bytes([b]), b) for b in range(256)] + [(b"ab", 256)])
    assert len(image) > 0
    address = _address(image)
    model = BpeModel(image=image)
    del image
    assert _mapping_at(address) is not None  # the model still reads it
    assert model.encode(b"abab", [2, 4]) == [256, 256]
    del model
    assert _mapping_at(address) is None
