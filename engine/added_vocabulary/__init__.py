"""Added vocabulary: finds special and added literals in a text and applies the policy."""
