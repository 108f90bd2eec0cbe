"""Dependency aliases for routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from backend.services.container import Services


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
