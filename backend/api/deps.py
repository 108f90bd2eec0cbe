"""Dependency aliases for routes: the services, and the verified caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from backend.auth.identity import Identity
from backend.composition import Services


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def current_user(request: Request, services: ServicesDep) -> Identity:
    """Who the request acts as (AUTH_MODE). A plain def: FastAPI runs it in a worker thread, where a
    token with an unknown key id may fetch the signing keys without blocking the event loop."""
    identity = services.authenticator.authenticate(request.headers.get("authorization"))
    request.state.identity = identity  # for the rate limiter and the access log
    return identity


CurrentUser = Annotated[Identity, Depends(current_user)]
