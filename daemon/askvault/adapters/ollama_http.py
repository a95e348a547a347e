"""Ollama's plain HTTP side, with the standard library only: which hosts may be contacted,
and the status probe (`/api/tags`, `/api/version`) of `status` and `doctor`.

Kept apart from adapters/ollama.py (the `ollama` client, with httpx and pydantic: ~0.2 s
to import) so that `askvault status` and a words-only search never load that client.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from askvault.errors import ConfigError, RemoteHostRefused
from askvault.records import Fingerprint

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_PORT = 11434
UNAVAILABLE_HINT = "is `ollama serve` running? Try `askvault doctor`"
REMOTE_HINT = (
    "askvault talks only to an Ollama on this machine: point OLLAMA_HOST at 127.0.0.1, or allow"
    " this host with `allow_remote_ollama = true` under [ollama] in the config file"
    " (or ASKVAULT_OLLAMA__ALLOW_REMOTE_OLLAMA=true)"
)


def check_host_allowed(url: str, allow_remote: bool) -> str:
    """Normalise an Ollama host as the client would and refuse a non-loopback one.

    Accepts what OLLAMA_HOST accepts (`127.0.0.1:11434`, `localhost`,
    `http://[::1]:11434`, `:11435`, empty for the default); `0.0.0.0` and `::` (a
    server's "all interfaces") mean this machine. A host name other than `localhost`
    counts as remote: no DNS lookup is made to find out. Returns `scheme://host:port`.
    """
    raw = (url or "").strip()
    if not raw:
        return DEFAULT_HOST
    scheme, sep, rest = raw.partition("://")
    if sep:
        scheme = scheme.lower()
        default_port = 443 if scheme == "https" else 80
    else:
        scheme, rest, default_port = "http", raw, DEFAULT_PORT
    if scheme not in ("http", "https"):
        raise ConfigError([f"ollama.host: unsupported scheme {scheme!r} in {raw!r} (use http)"])
    split = urllib.parse.urlsplit(f"{scheme}://{rest}")
    try:
        port = split.port or default_port
    except ValueError:
        raise ConfigError([f"ollama.host: invalid port in {raw!r}"]) from None
    host = (split.hostname or "127.0.0.1").lower()
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    if not allow_remote and not _is_loopback(host):
        raise RemoteHostRefused(
            f"refusing to connect to Ollama at {raw}: {host} is not a loopback address",
            REMOTE_HINT,
        )
    shown = f"[{host}]" if ":" in host else host
    path = split.path.strip("/")
    return f"{scheme}://{shown}:{port}" + (f"/{path}" if path else "")


def host_refusal(url: str, allow_remote: bool) -> RemoteHostRefused | None:
    """The refusal of this host by the configuration, or None when askvault may use it.

    A refusal is a setting, not an outage: retrying it can never succeed, so callers report
    it (with its hint, which names the setting) instead of backing off."""
    try:
        check_host_allowed(url, allow_remote)
    except RemoteHostRefused as exc:
        return exc
    return None


class RefusedEmbedder:
    """Stands in for the embedder when the configuration refuses the Ollama host
    (implements `records.Embedder`): every call raises the refusal, nothing is sent."""

    def __init__(self, refusal: RemoteHostRefused) -> None:
        self.refusal = refusal

    def fingerprint(self) -> Fingerprint:
        raise self.refusal

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        raise self.refusal

    def embed_query(self, text: str, model: str | None = None) -> list[float]:
        raise self.refusal

    def close(self) -> None:
        """Nothing to close: no connection was ever made."""


def _is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost."):
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


@dataclass(frozen=True)
class OllamaStatus:
    """What `status` and `doctor` report about Ollama."""

    url: str
    reachable: bool
    version: str | None
    models: tuple[str, ...]
    error: str | None
    hint: str | None = None
    refused: bool = False


def probe_ollama(host: str, *, timeout_s: float, allow_remote: bool) -> OllamaStatus:
    """Ask Ollama for its version and pulled models; never raises for an Ollama problem."""
    try:
        url = check_host_allowed(host, allow_remote)
    except RemoteHostRefused as exc:
        return OllamaStatus(host, False, None, (), exc.message, exc.hint, refused=True)
    import urllib.error  # with urllib.request, ~15 ms: only when Ollama is asked

    try:
        listing = _get_json(url, "/api/tags", timeout_s)
    except urllib.error.HTTPError as exc:
        return OllamaStatus(
            url,
            False,
            None,
            (),
            f"Ollama at {url} failed: {exc.reason} (status {exc.code})",
            UNAVAILABLE_HINT,
        )
    except (OSError, ValueError) as exc:
        return OllamaStatus(
            url,
            False,
            None,
            (),
            f"Ollama is not reachable at {url} ({_reason(exc, timeout_s)})",
            UNAVAILABLE_HINT,
        )
    models = tuple(
        str(m["model"])
        for m in (listing.get("models") or [])
        if isinstance(m, dict) and m.get("model")
    )
    try:
        version = _get_json(url, "/api/version", timeout_s).get("version")
    except (OSError, ValueError):
        version = None
    return OllamaStatus(url, True, str(version) if version else None, models, None)


def model_digest(host: str, model: str, *, timeout_s: float, allow_remote: bool) -> str | None:
    """The digest Ollama lists for `model` (`/api/tags`), or None when Ollama cannot say
    (down, refused host, model not pulled): the caller then asks through the client,
    which reports why."""
    try:
        url = check_host_allowed(host, allow_remote)
        listing = _get_json(url, "/api/tags", timeout_s)
    except (OSError, ValueError, RemoteHostRefused, ConfigError):
        return None
    digests = {
        str(m.get("model") or ""): str(m.get("digest") or "")
        for m in (listing.get("models") or [])
        if isinstance(m, dict)
    }
    found = _find_model(list(digests), model)
    return (digests[found] or "unknown") if found is not None else None


def reported_dimension(
    host: str, model: str, *, timeout_s: float, allow_remote: bool
) -> int | None:
    """The embedding length Ollama reports for `model` (`/api/show`), or None when it
    cannot say (down, refused host, not pulled, no such entry)."""
    try:
        url = check_host_allowed(host, allow_remote)
        shown = _get_json(url, "/api/show", timeout_s, body={"model": model})
    except (OSError, ValueError, RemoteHostRefused, ConfigError):
        return None
    info = shown.get("model_info")
    return embedding_length(info) if isinstance(info, dict) else None


def embedding_length(model_info: Mapping[str, Any]) -> int | None:
    """`<arch>.embedding_length` of an /api/show `model_info`, when it holds one."""
    lengths = [
        v
        for k, v in model_info.items()
        if k.endswith(".embedding_length") and isinstance(v, int) and v > 0
    ]
    return lengths[0] if lengths else None


def _get_json(
    url: str, path: str, timeout_s: float, *, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    import urllib.request

    # No proxy, whatever HTTP_PROXY / ALL_PROXY say: the host was vetted, not the route.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(
        url + path,
        data=None if body is None else json.dumps(body).encode("utf-8"),
        headers={} if body is None else {"Content-Type": "application/json"},
    )
    with opener.open(request, timeout=timeout_s) as response:
        doc = json.loads(response.read().decode("utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path} did not answer a JSON object")
    return doc


def _reason(exc: BaseException, timeout_s: float) -> str:
    cause = getattr(exc, "reason", exc)
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused"
    if isinstance(cause, (TimeoutError, socket.timeout)):
        return f"sent nothing for {timeout_s:g} s"
    return str(cause)


def model_present(status: OllamaStatus, name: str) -> bool:
    """True if `name` is among the pulled models; `llama3.2` matches `llama3.2:latest`."""
    return _find_model(status.models, name) is not None


def _find_model(names: Sequence[str], name: str) -> str | None:
    wanted = {name, name if ":" in name else f"{name}:latest"}
    if name.endswith(":latest"):
        wanted.add(name.removesuffix(":latest"))
    return next((n for n in names if n in wanted), None)
