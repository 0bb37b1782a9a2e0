"""Unigram: Viterbi over a vocabulary of scored pieces (T5's model), native core and cache."""
