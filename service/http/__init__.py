"""The HTTP room: the layers every request passes (``layers/``), composed in one place
(``app.py``), the framework's routes (``routes/``), the OpenAPI document and the
one-write server protocol. It reads the operation table (``operations/table.py``) and
the runtime's state; nothing below it imports it."""
