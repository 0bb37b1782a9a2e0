"""Post-processors: put BOS/EOS and template ids around a text's ids, and truncate keeping them."""
