"""POST /admin/reload: rescan the artifact roots now (hot reload; SIGHUP does the same).

Off unless ``TOKSERVE_ADMIN_TOKEN`` is set (404 ``admin_disabled``); then it needs
``Authorization: Bearer <admin token>`` (401 without a token, 403 with another one).
The admin token is separate from the API token: callers of /encode cannot reload.
"""

from __future__ import annotations

from fastapi import Request, Response

from ...errors import AdminDisabled, Forbidden, Unauthorized, dumps
from ...runtime.reload import reload_artifacts
from ...runtime.settings import Settings
from ...runtime.state import state_of
from ..bearer import token_matches
from ._common import json_response



def check_admin(settings: Settings, authorization: str | None) -> None:
    if settings.admin_token is None:
        raise AdminDisabled("admin endpoints are disabled; set TOKSERVE_ADMIN_TOKEN to "
                            "enable them")
    if not authorization:
        raise Unauthorized("missing admin token; send 'Authorization: Bearer <admin token>'")
    if not token_matches(authorization, settings.admin_token.get_secret_value().encode()):
        raise Forbidden("invalid admin token")


async def reload(request: Request) -> Response:
    """Load added versions, drop removed ones; reports what changed and what was refused."""
    state = state_of(request.app)
    check_admin(state.settings, request.headers.get("authorization"))
    report = await reload_artifacts(state, "admin")
    return json_response(dumps({**report.as_dict(), "tokenizers": state.registry.refs()}))
