"""Thin routers, one per resource: parse → ``tokserve.service.serving`` → response."""

from . import admin, health, metrics, operations, playground, tokenizers

ROUTERS = [
    operations.router,
    tokenizers.router,
    health.router,
    metrics.router,
    playground.router,
    admin.router,
]
