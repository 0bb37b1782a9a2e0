"""Authoring: import, export and write artifact versions; off the serving path."""
