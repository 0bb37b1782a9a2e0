"""Typing stub for the compiled byte-span converter (_offsets.pyx)."""

UNIT_CHAR: int
UNIT_UTF16: int
UNIT_BYTE: int

def units_from_byte_spans(data: bytes, spans: list[int], unit: int) -> list[tuple[int, int]]: ...
