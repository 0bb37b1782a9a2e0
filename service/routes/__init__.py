"""Thin routers, one per resource: parse → ``service.serving`` → response."""

from . import (
    admin, count, decode, encode, health, metrics, playground, render_chat, tokenizers,
)

ROUTERS = [
    encode.router,
    decode.router,
    count.router,
    render_chat.router,
    tokenizers.router,
    health.router,
    metrics.router,
    playground.router,
    admin.router,
]
