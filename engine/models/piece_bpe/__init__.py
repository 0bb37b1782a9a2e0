"""Piece BPE: tokenizers' BPE model over string pieces (the SentencePiece BPE family)."""
