"""Reading what authorization servers answer: JSON objects, OAuth error responses, the
well-known documents tried in turn. Messages name the step, the URL and the server's OAuth
error code, never a token or a secret."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from ._errors import OAuthError

if TYPE_CHECKING:
    import httpx


def short(text: object, limit: int = 200) -> str:
    """``text`` on one line, cut at ``limit`` characters (for a server's words in a message)."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[:limit] + "..."


def json_object(resp: httpx.Response, what: str) -> dict[str, Any]:
    """The response's JSON object, else :class:`OAuthError` (``invalid_metadata``)."""
    try:
        data = resp.json()
    except ValueError:
        ctype = resp.headers.get("content-type", "?")
        raise OAuthError(f"{what} at {resp.request.url} is not JSON (HTTP {resp.status_code}, {ctype})",
                         error="invalid_metadata", status=resp.status_code) from None
    if not isinstance(data, dict):
        raise OAuthError(f"{what} at {resp.request.url} is not a JSON object", error="invalid_metadata",
                         status=resp.status_code)
    return data


def error_from(resp: httpx.Response, what: str, url: str) -> OAuthError:
    """The :class:`OAuthError` for a refused request (RFC 6749 §5.2 error response)."""
    error, desc = None, None
    try:
        data = resp.json()
        if isinstance(data, dict):
            error, desc = data.get("error"), data.get("error_description")
    except ValueError:
        pass
    parts = f"{what} at {url} failed: HTTP {resp.status_code}"
    if isinstance(error, str):
        parts += f", {short(error, 60)}"
    if isinstance(desc, str):
        parts += f" ({short(desc)})"
    return OAuthError(parts, error=error if isinstance(error, str) else "server_error", status=resp.status_code)


async def documents(http: httpx.AsyncClient, urls: Iterable[str], what: str,
                    problems: list[str]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Each well-known URL's JSON document in turn; what went wrong with the others goes to
    ``problems`` (a 404 is not a problem: the next candidate URL is simply tried)."""
    import httpx

    for url in urls:
        try:
            resp = await http.get(url)
        except httpx.HTTPError as exc:
            problems.append(f"{url}: {type(exc).__name__}")
            continue
        if resp.status_code != 200:
            if resp.status_code >= 500:
                problems.append(f"{url}: HTTP {resp.status_code}")
            continue
        try:
            doc = json_object(resp, what)
        except OAuthError as exc:
            problems.append(str(exc))
            continue
        yield url, doc
