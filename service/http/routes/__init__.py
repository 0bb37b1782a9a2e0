"""Endpoint functions of the operations that are not hot POST handlers (GET routes, admin,
the page). Routes are built from ``tokserve.service.operations.table.OPERATIONS``, the one table."""
