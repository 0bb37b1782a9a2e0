"""Hugging Face text-embeddings-inference's tokenizer routes under ``/compat/tei/`` (shapes
of TEI's router: ``router/src/http/types.rs``, ``server.rs``; ``core/src/tokenization.rs``
``into_tokens``), the ones embedding pipelines call to count and cut their chunks.

* ``tokenize``: ``inputs`` (a string, or a list of them), ``add_special_tokens``
  (default true), ``prompt_name`` -> always a list of token lists, one per input:
  ``[[{"id", "text", "special", "start", "stop"}]]``. A token the post-processor added
  (BOS/EOS) is ``special``: its text is the token and it has no offsets (null); every
  other token has byte offsets into its input and ``text`` is the input between them.
  Special-token literals in the input are matched, as TEI's tokenizer matches them.
* ``decode``: ``ids`` (a list, or a list of lists), ``skip_special_tokens`` (default
  true) -> always a list of strings.

Errors: ``{"error": str, "error_type": str}``: 422 ``Validation`` for a body it cannot
use, 400 ``Empty`` for an empty batch, 422 ``Tokenizer`` for ids the tokenizer cannot
decode, 413 ``Validation`` over a size limit, 404 ``Validation`` for a ``model`` nothing
here serves (``error_type`` stays within TEI's ``ErrorType`` names, which its clients
parse). TEI serves one model and has no ``model`` field: here ``model`` (an extension,
as on TGI's base) or a ``/compat/tei/models/{name}/`` base URL selects the tokenizer.
``prompt_name`` is refused: no artifact carries sentence-transformers prompts.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, RootModel

from ...errors import InvalidRequest
from ...runtime.state import ServiceState
from . import BODY_ERRORS, CompatRequest, Dialect, Route, ok, target, token_strings


class EmptyBatch(InvalidRequest):
    """An empty list of inputs or of id rows: TEI's ``Empty`` error, 400."""

    code = "empty_batch"


def _classify(status: int, code: str) -> tuple[int, str]:
    if code == "empty_batch":
        return 400, "Empty"
    if code in ("unknown_token_id", "invalid_utf8"):
        return 422, "Tokenizer"
    if code in ("unknown_model", "tokenizer_not_found"):
        return 404, "Validation"
    if status == 413:  # over a size limit: the contract's status, and TEI's for a batch
        return 413, "Validation"
    if status in (400, 404, 415, 422):
        return 422, "Validation"
    if status == 503:
        return 503, "Unhealthy"
    if status >= 500:
        return status, "Backend"
    return status, "Validation"  # 401/403: the front door's bearer check


class TeiError(BaseModel):
    """TEI's ErrorResponse."""

    error: str
    error_type: str = Field(description="One of TEI's ErrorType names: Validation, "
                                        "Tokenizer, Empty, Unhealthy, Backend.")


DIALECT = Dialect("tei", TeiError, _classify,
                  lambda status, kind, message, param: {"error": message, "error_type": kind})


class TeiTokenizeRequest(CompatRequest):
    inputs: str | list[str]
    add_special_tokens: bool = True
    prompt_name: str | None = Field(default=None, description="Refused: no artifact has "
                                                              "sentence-transformers prompts.")
    model: str | None = Field(default=None, description="An extension: a name GET /models "
                                                        "knows selects that tokenizer.")


class TeiSimpleToken(BaseModel):
    id: int
    text: str
    special: bool
    start: int | None = Field(description="Byte offset into the input; null when special.")
    stop: int | None


class TeiTokenizeResponse(RootModel[list[list[TeiSimpleToken]]]):
    """One list of tokens per input (a single input too)."""


U32 = Annotated[int, Field(ge=0, lt=1 << 32)]  # TEI's ids are u32


class TeiDecodeRequest(CompatRequest):
    ids: list[U32] | list[list[U32]]
    skip_special_tokens: bool = True
    model: str | None = Field(default=None, description="An extension: a name GET /models "
                                                        "knows selects that tokenizer.")


class TeiDecodeResponse(RootModel[list[str]]):
    """One text per id list (a single list too)."""


def _tokens(entry: Any, text: str, add_special_tokens: bool) -> list[dict[str, Any]]:
    ids, offsets = entry.tokenizer.encode_with_offsets(
        text, units="byte", special_tokens="allow", add_special_tokens=add_special_tokens)
    data = text.encode("utf-8", "surrogatepass")
    added = [i for i, (start, stop) in zip(ids, offsets) if start == stop]
    literal = dict(zip(added, token_strings(entry, added)))
    out = []
    for i, (start, stop) in zip(ids, offsets):
        if start == stop:  # added by the post-processor: no offsets
            out.append({"id": i, "text": literal[i], "special": True, "start": None,
                        "stop": None})
        else:
            out.append({"id": i, "text": data[start:stop].decode("utf-8", "replace"),
                        "special": False, "start": start, "stop": stop})
    return out


def tokenize(state: ServiceState, req: TeiTokenizeRequest, name: str | None) -> Any:
    if req.prompt_name is not None:
        raise InvalidRequest(f"`prompt_name` is set to `{req.prompt_name}` but no prompts "
                             "were found in the Sentence Transformers configuration",
                             field="prompt_name")
    inputs = [req.inputs] if isinstance(req.inputs, str) else req.inputs
    if not inputs:
        raise EmptyBatch("`inputs` cannot be empty", field="inputs")
    entry = target(state, req.model, name).entry
    rows = [_tokens(entry, text, req.add_special_tokens) for text in inputs]
    state.metrics.count_tokens(entry.ref, "/compat/tei/tokenize", sum(map(len, rows)))
    return ok(rows, entry)


def decode(state: ServiceState, req: TeiDecodeRequest, name: str | None) -> Any:
    # TEI's InputIds is untagged, Single first: [] is one empty list (one "" text)
    rows = req.ids if req.ids and isinstance(req.ids[0], list) else [req.ids]
    entry = target(state, req.model, name).entry
    decode_ids = entry.tokenizer.decode
    return ok([decode_ids(row, skip_special_tokens=req.skip_special_tokens) for row in rows],
              entry)


ROUTES = (
    Route("tokenize", "TEI /tokenize: input(s) -> tokens with their text, special flag and "
          "byte offsets", TeiTokenizeRequest, (TeiTokenizeResponse,), tokenize,
          {"inputs": "test", "add_special_tokens": True},
          errors=BODY_ERRORS + ((422, EmptyBatch.code),)),
    Route("decode", "TEI /decode: id list(s) -> texts", TeiDecodeRequest,
          (TeiDecodeResponse,), decode, {"ids": [[1944]], "skip_special_tokens": True}),
)
