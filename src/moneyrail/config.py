"""One Settings class for every process (web, worker, scheduler, CLI)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field, model_validator
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
    # `moneyrail web` behind a reverse proxy: the addresses (comma-separated, CIDR allowed, `*` for any)
    # whose X-Forwarded-For / X-Forwarded-Proto the web process believes (the client's address in the
    # risk lists). Unset: the headers are ignored and the socket peer is the client. uvicorn's own
    # FORWARDED_ALLOW_IPS, which earlier versions documented, is still read.
    forwarded_allow_ips: str | None = Field(
        default=None, validation_alias=AliasChoices("MONEYRAIL_FORWARDED_ALLOW_IPS", "FORWARDED_ALLOW_IPS")
    )
    # The web process's cyclic garbage collector (runtime.py). Objects alive once the app has started
    # (modules, the app, mappers: ~200,000) are frozen out of every later collection, and
    # the youngest generation is collected after this many net new container objects (Python's 700
    # runs a collection every few requests); 0 keeps Python's own threshold.
    gc_freeze: bool = True
    gc_gen0_threshold: int = Field(default=50_000, ge=0)
    public_base_url: str | None = None  # what the printed curl line and hosted links use
    log_level: str = "INFO"
    log_json: bool = True

    data_dir: Path = Path(".moneyrail")  # embedded PostgreSQL data and Redis socket (dev only)
    # A steady pool, no overflow: connections opened past the pool under sustained load would be closed
    # on return and reopened at once, each paying a new backend and the driver's connection set-up.
    db_pool_size: int = 20
    db_max_overflow: int = 0

    idempotency_retention_hours: int = 24
    # The operator console (/console): a signed-in session ends after this long without a request (idle)
    # and after this long in any case (absolute); this many failed sign-ins in a row lock the account for
    # `console_lockout_seconds`; an operator's one-time set-up link works this long.
    console_session_idle_seconds: float = Field(default=1800, gt=0)
    console_session_absolute_seconds: float = Field(default=12 * 3600, gt=0)
    console_lockout_attempts: int = Field(default=5, ge=1)
    console_lockout_seconds: float = Field(default=900, gt=0)
    console_setup_link_hours: float = Field(default=24, gt=0)
    # How long a web process remembers an API key, a publishable key and the environment's publishable
    # key between requests (kit/ttl_cache.py). A key revoked by another process (the CLI) stops working
    # within this many seconds; 0 turns the cache off.
    key_cache_seconds: float = 5.0
    event_retention_days: int = 30

    worker_processes: int = 1
    worker_threads: int = 8
    # extra actor modules for `moneyrail worker`, comma-separated (plug-ins, test probes)
    worker_modules: str = ""
    worker_metrics_port: int = 9191  # dramatiq's Prometheus exposition for the worker processes
    # where that exposition listens: loopback by default; 0.0.0.0 in a pod that Prometheus scrapes
    worker_metrics_host: str = "127.0.0.1"
    metrics_token: str | None = None  # bearer token required on GET /metrics when set

    operation_lease_seconds: float = 60.0  # a claimed attempt not finished by then is re-driven
    relay_interval_seconds: float = 1.0  # the relay's timer between NOTIFY wake-ups
    relay_redrive_seconds: float = 30.0  # re-send a published operation no worker took by then
    relay_batch_size: int = 500
    leader_poll_seconds: float = 5.0  # how often a waiting scheduler tries to become the leader
    # webhook deliveries back off from this delay, doubling to 6 h, over about 3 days in all
    webhook_retry_base_seconds: float = 30.0
    webhook_max_attempts: int = 20

    # Fernet keys (comma-separated, the first encrypts, all decrypt) that seal the secrets moneyrail must
    # read back: webhook signing secrets, stored idempotent answers. `moneyrail secrets generate-key`
    # makes one; `moneyrail secrets rotate` re-encrypts with the first after a new key is put in front.
    secret_keys: str | None = None
    # Requests per second per API key, unless the operator set the installation's own figure
    # (`moneyrail settings set --rate-limit`); 0 turns the limit off.
    rate_limit_per_second: int = Field(default=100, ge=0)

    # Receipts (deliveries): e-mail through SMTP, `smtp://[user:password@]host:port` (smtps:// for TLS);
    # unset, e-mail receipts are recorded as failed with "SMTP is not configured". SMS through a sender
    # chosen by name; `sandbox` records messages in the database.
    smtp_url: str | None = None
    smtp_from: str = "receipts@moneyrail.localhost"
    # receipts back off from this delay, doubling to 10 min: about 9 to 17 minutes over 10 attempts
    receipt_retry_base_seconds: float = 2.0
    receipt_max_attempts: int = 10
    sms_sender: str = "sandbox"
    # The simulated network reports a captured payment's real cost this many (sandbox) days later.
    sandbox_cost_report_days: int = 3
    # The sandbox simulator reached over a simulated network (processor/sandbox/network.py), so tests and
    # benchmarks meet a processor that is far away and sometimes unreachable. All 0: no network at all.
    # Each call's round trip is drawn uniformly within latency ± jitter; the rates are each call's chances
    # of a connection reset (nothing done), a timeout whose request was lost (nothing done) and a timeout
    # whose answer was lost (done: only the call's idempotency key keeps a retry from doing it twice).
    sandbox_latency_ms: float = Field(default=0.0, ge=0)
    sandbox_latency_jitter_ms: float = Field(default=0.0, ge=0)
    sandbox_reset_rate: float = Field(default=0.0, ge=0, le=1)
    sandbox_lost_request_rate: float = Field(default=0.0, ge=0, le=1)
    sandbox_lost_answer_rate: float = Field(default=0.0, ge=0, le=1)
    # the network's draws repeat from this seed (tests); unset, they differ in every process
    sandbox_network_seed: int | None = None
    cost_report_sweep_seconds: float = 30.0  # how often the scheduler asks for due cost reports
    # Charges the processor made that no payment recorded (a lost transaction) are released once this
    # old (real time), by a sweep this often (payments/orphans.py)
    processor_orphan_grace_seconds: float = 300.0
    processor_orphan_sweep_seconds: float = 60.0
    # Dispute evidence files live here, one file per upload, never in database rows (unset: data_dir/files)
    files_dir: Path | None = None
    # Where the `stripe` processor sends its API calls (file uploads too, unless this is Stripe's own
    # address) and where the hosted pages load Stripe.js from: Stripe's own by default; a test or a
    # staging deployment points both at localstripe (or a double in front of it).
    stripe_api_base: str = "https://api.stripe.com"
    stripe_js_url: str = "https://js.stripe.com/v3/"

    @model_validator(mode="after")
    def sandbox_failure_rates_add_up(self) -> Settings:
        failing = self.sandbox_reset_rate + self.sandbox_lost_request_rate + self.sandbox_lost_answer_rate
        if failing > 1:
            raise ValueError(
                "MONEYRAIL_SANDBOX_RESET_RATE, _LOST_REQUEST_RATE and _LOST_ANSWER_RATE are shares of one"
                f" call's outcomes: they add up to {failing}, more than 1"
            )
        return self

    @property
    def evidence_files_dir(self) -> Path:
        return self.files_dir if self.files_dir is not None else self.data_dir / "files"

    @property
    def base_url(self) -> str:
        return self.public_base_url or f"http://{self.host}:{self.port}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
