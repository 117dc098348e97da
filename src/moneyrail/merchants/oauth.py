"""The OAuth 2.1 authorization server of merchant connections, on authlib (CONVENTIONS.md §13).

authlib's AuthorizationServer, AuthorizationCodeGrant and CodeChallenge (RFC 7636) decide every rule of
the flow: the registered redirect URI, `response_type=code`, the PKCE challenge and verifier, the code's
client and redirect URI, and the RFC 6749 error answers. authlib is synchronous and our storage is
async, so one server is built per request around what the service loaded beforehand (the application,
the presented code), and it records what it decided (a code issued, a code consumed) for the service to
write afterwards in the request's unit of work.

The application is the OAuth client: one per installation and environment, with `client_id`
`<installation>.<sandbox|live>`. It authenticates at the token endpoint with its secret API key as
Bearer (the `moneyrail_secret_key` method), which the service has checked before the server runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from authlib.oauth2 import AuthorizationServer, OAuth2Request
from authlib.oauth2.rfc6749 import AuthorizationCodeMixin, ClientMixin, OAuth2Payload, grants
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7636.challenge import compare_s256_code_challenge

from moneyrail.kit.tenant import Tenant

# What a merchant grants an application: the merchant's capabilities it may use.
MERCHANT_SCOPES = ("payments", "refunds", "transfers", "payouts")
DEFAULT_SCOPE = " ".join(MERCHANT_SCOPES)
SECRET_KEY_AUTH_METHOD = "moneyrail_secret_key"  # noqa: S105 - a method name, not a secret


def client_id_of(tenant: Tenant) -> str:
    return f"{tenant.installation_id}.{'live' if tenant.livemode else 'sandbox'}"


class Application(ClientMixin):  # type: ignore[misc]
    """The OAuth client: an installation in one environment, with its registered redirect URIs."""

    def __init__(self, tenant: Tenant, redirect_uris: Sequence[str], *, may_connect: bool = True) -> None:
        self.tenant = tenant
        self.redirect_uris = tuple(redirect_uris)
        self.may_connect = may_connect  # the key has merchants:write

    def get_client_id(self) -> str:
        return client_id_of(self.tenant)

    def get_default_redirect_uri(self) -> None:
        return None  # the redirect URI is always named, and must be registered exactly

    def get_allowed_scope(self, scope: str | None) -> str:
        if not scope:
            return DEFAULT_SCOPE
        return " ".join(s for s in scope.split() if s in MERCHANT_SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris  # exactly: no prefix, no pattern

    def check_client_secret(self, client_secret: str) -> bool:
        return False  # never a client secret: the API key authenticates

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == SECRET_KEY_AUTH_METHOD

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "authorization_code" and self.may_connect


@dataclass(frozen=True)
class PresentedCode(AuthorizationCodeMixin):  # type: ignore[misc]
    """A stored code the token request names, still usable (unused, unexpired, this application's)."""

    id: str
    merchant_id: str
    redirect_uri: str
    scope: str
    code_challenge: str
    code_challenge_method: str

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass(frozen=True)
class IssuedCode:
    code: str  # handed to the merchant's browser once; stored as its SHA-256
    redirect_uri: str
    scope: str
    code_challenge: str
    code_challenge_method: str


@dataclass(frozen=True)
class Answer:
    """authlib's answer: a redirect (302 + Location), a token, or an RFC 6749 error body."""

    status: int
    body: Any
    headers: list[tuple[str, str]]

    @property
    def location(self) -> str | None:
        return next((value for name, value in self.headers if name.lower() == "location"), None)


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, values: Mapping[str, Sequence[str]]) -> None:
        self._datalist = {key: list(items) for key, items in values.items()}
        self._data = {key: items[0] for key, items in values.items() if items}

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> dict[str, list[str]]:
        return self._datalist


class Request(OAuth2Request):  # type: ignore[misc]
    """What authlib reads of an HTTP request: query (authorize) or form (token) parameters."""

    def __init__(
        self, method: str, uri: str, values: Mapping[str, Sequence[str]], headers: Mapping[str, str]
    ) -> None:
        super().__init__(method=method, uri=uri, headers=dict(headers))
        self.payload = _Payload(values)

    @property
    def args(self) -> dict[str, str]:
        return dict(self.payload.data)

    @property
    def form(self) -> dict[str, str]:
        return dict(self.payload.data)


class S256Only(CodeChallenge):  # type: ignore[misc]
    """PKCE with S256 only (OAuth 2.1): `plain` and a missing challenge are refused at the consent page,
    and a code issued with a challenge needs its verifier (a wrong one is `invalid_grant`)."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    CODE_CHALLENGE_METHODS = {"S256": compare_s256_code_challenge}

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("Missing 'code_challenge'")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("Unsupported 'code_challenge_method': only S256 is accepted")
        super().validate_code_challenge(grant, redirect_uri)


class MerchantCodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = [SECRET_KEY_AUTH_METHOD]
    AUTHORIZATION_CODE_LENGTH = 48

    @property
    def _server(self) -> MerchantAuthorizationServer:
        server: MerchantAuthorizationServer = self.server
        return server

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        self._server.issued.append(
            IssuedCode(
                code=code,
                redirect_uri=request.payload.redirect_uri,
                scope=request.scope,
                code_challenge=data["code_challenge"],
                code_challenge_method=data.get("code_challenge_method", "S256"),
            )
        )

    def query_authorization_code(self, code: str, client: Application) -> PresentedCode | None:
        # the service loaded the code the request names, if it is this application's and usable
        return self._server.presented_code

    def delete_authorization_code(self, authorization_code: PresentedCode) -> None:
        self._server.consumed.append(authorization_code)

    def authenticate_user(self, authorization_code: PresentedCode) -> str:
        return authorization_code.merchant_id


class MerchantAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    def __init__(self, application: Application | None, presented_code: PresentedCode | None = None) -> None:
        super().__init__(scopes_supported=list(MERCHANT_SCOPES))
        self.application = application
        self.presented_code = presented_code
        self.issued: list[IssuedCode] = []
        self.consumed: list[PresentedCode] = []
        self.register_grant(MerchantCodeGrant, [S256Only(required=True)])
        self.register_client_auth_method(SECRET_KEY_AUTH_METHOD, self._authenticated_application)
        self.register_token_generator("default", self._token)

    def _authenticated_application(self, query_client: Any, request: Any) -> Application | None:
        return self.application  # None: the key did not authenticate, so invalid_client

    def _token(self, *, client: Application, user: str, scope: str, **_: Any) -> dict[str, Any]:
        return {"merchant": user, "scope": scope, "livemode": client.tenant.livemode}

    def query_client(self, client_id: str) -> Application | None:
        application = self.application
        return application if application is not None and application.get_client_id() == client_id else None

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        pass  # the merchant's access is written by the service from `consumed`

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def create_oauth2_request(self, request: Request) -> Request:
        return request

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> Answer:
        return Answer(status, body, list(headers))
