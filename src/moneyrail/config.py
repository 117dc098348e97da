"""One Settings class for every process (web, worker, scheduler, CLI)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# The dated versions of the three APIs (spec part 9); the first is the current one.
API_VERSIONS: dict[str, tuple[str, ...]] = {
    "payments": ("2026-08-28",),
    "commerce": ("2026-09-04",),
    "fiscal": ("2026-08-29",),
}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MONEYRAIL_", extra="ignore")

    # The two servers. Unset means: `moneyrail dev` starts embedded ones; other commands refuse to start.
    database_url: str | None = Field(default=None, validation_alias="DATABASE_URL")
    redis_url: str | None = Field(default=None, validation_alias="REDIS_URL")

    host: str = "127.0.0.1"
    port: int = 8000
    public_base_url: str | None = None  # what the printed curl line and hosted links use
    log_level: str = "INFO"
    log_json: bool = True

    data_dir: Path = Path(".moneyrail")  # embedded PostgreSQL data and Redis socket (dev only)
    db_pool_size: int = 10
    db_max_overflow: int = 20

    idempotency_retention_hours: int = 24
    event_retention_days: int = 30

    worker_processes: int = 1
    worker_threads: int = 8

    @property
    def base_url(self) -> str:
        return self.public_base_url or f"http://{self.host}:{self.port}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
