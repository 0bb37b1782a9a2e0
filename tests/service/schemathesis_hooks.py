"""Schemathesis hooks for tests/service/test_schemathesis.py (SCHEMATHESIS_HOOKS).

The NDJSON stream route (POST /decode/stream) takes and answers newline-delimited JSON,
which the document describes as OpenAPI 3.2 reads a sequential media type: the array of
its lines. A generated array is sent one JSON value per line, and an answer is read back
as the array of its lines, which schemathesis then checks line by line against the
document. An example written as the wire text (a string) is sent as it is.
"""

import json

import schemathesis

NDJSON = ["application/x-ndjson", "application/jsonl"]


@schemathesis.serializer(*NDJSON)
def _ndjson_lines(ctx, value):
    if isinstance(value, str):
        return value.encode("utf-8")
    if not isinstance(value, list):  # a negative case: not an array of lines
        return json.dumps(value).encode("utf-8")
    return b"".join(json.dumps(item).encode("utf-8") + b"\n" for item in value)


@schemathesis.deserializer(*NDJSON)
def _ndjson_lines_back(ctx, response):
    return [json.loads(line) for line in response.content.decode("utf-8").splitlines()
            if line.strip()]
