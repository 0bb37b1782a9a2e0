"""The operations room: what the service does with a parsed request: the operation
table (``table.py``), the POST handlers, encode/count and decode with their limits,
chat rendering and counting (``conversation.py``, ``chat/``), streaming decode, the
other projects' routes (``compat/``), and the request schemas and body parser."""
