"""Normalizers: rewrite ordinary text (NFC, NFKC, ...) keeping an alignment to the original."""
