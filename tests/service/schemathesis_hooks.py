"""Schemathesis hooks for tests/service/test_schemathesis.py (SCHEMATHESIS_HOOKS).

The NDJSON stream route (POST /decode/stream) takes and answers newline-delimited JSON,
documented as text: bodies are sent as UTF-8 text, answers read as text.
"""

import schemathesis

NDJSON = ["application/x-ndjson", "application/jsonl"]

schemathesis.serializer.alias(NDJSON, "text/plain")


@schemathesis.deserializer(*NDJSON)
def _ndjson_as_text(ctx, response):
    return response.content.decode("utf-8")
