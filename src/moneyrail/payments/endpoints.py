from __future__ import annotations

from fastapi import APIRouter

from moneyrail.api.routing import MoneyrailRoute

router = APIRouter(route_class=MoneyrailRoute, tags=["payments"])
