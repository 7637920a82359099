"""The BLENDMESH_OAUTH_* settings: which issuer, which resource, and who each subject is.

OAuth is off unless BLENDMESH_OAUTH_ISSUER is set; then BLENDMESH_OAUTH_RESOURCE must be
too, since it is the audience every token must name and no guess from a request's
``Host`` would be safe. Subjects map to blendmesh users as static tokens do: ``subject=user``
pairs in BLENDMESH_OAUTH_SUBJECTS (comma separated) and lines in the file named by
BLENDMESH_OAUTH_SUBJECTS_FILE. A subject nobody mapped is refused.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from services.runtime.server.users import UsersFileError, check_name
from services.runtime.service.settings import SettingsError

ISSUER = "BLENDMESH_OAUTH_ISSUER"
RESOURCE = "BLENDMESH_OAUTH_RESOURCE"
SUBJECT_CLAIM = "BLENDMESH_OAUTH_SUBJECT_CLAIM"
SUBJECTS = "BLENDMESH_OAUTH_SUBJECTS"
SUBJECTS_FILE = "BLENDMESH_OAUTH_SUBJECTS_FILE"
SCOPES = "BLENDMESH_OAUTH_SCOPES"
ALGORITHMS = "BLENDMESH_OAUTH_ALGORITHMS"
LEEWAY = "BLENDMESH_OAUTH_LEEWAY"

# Signatures by a public key only: "none" and the HMAC family (HS*) are never accepted, so
# a public key can never be used as a shared secret.
ASYMMETRIC = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
MAX_LEEWAY = 300  # seconds of clock skew tolerated at most; more would stretch a token's life
DEFAULT_LEEWAY = 30
MAX_SUBJECTS = 10_000
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_SCOPES = 32


@dataclass(frozen=True)
class OAuthSettings:
    """What a token must be to count, and which user its subject is."""

    issuer: str
    resource: str
    subject_claim: str = "sub"
    subjects: Mapping[str, str] | None = None
    scopes: tuple[str, ...] = ()  # every one required; advertised as scopes_supported
    algorithms: tuple[str, ...] = ASYMMETRIC
    leeway: int = DEFAULT_LEEWAY

    def user_of(self, subject: str) -> str | None:
        return (self.subjects or {}).get(subject)


def _loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_issuer(url: str, name: str = ISSUER) -> str:
    """An https URL (http only on a loopback address): its keys decide who may call."""
    parts = urlsplit(url)
    secure = parts.scheme == "https" or (parts.scheme == "http" and _loopback(parts.hostname))
    if not secure or not parts.hostname or parts.query or parts.fragment:
        raise SettingsError(
            f"{name}={url[:200]!r} is not an issuer URL; give the authorization server's "
            "https:// URL exactly as its tokens' iss says (http:// only on a loopback address)"
        )
    return url


def check_resource(url: str) -> str:
    """An absolute http(s) URL without a fragment (RFC 8707 §2), compared as written."""
    parts = urlsplit(url)
    quotable = url.isprintable() and not any(c in url for c in ' "\\')  # it goes in a header
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.fragment
        or not quotable
    ):
        raise SettingsError(
            f"{RESOURCE}={url[:200]!r} is not a resource identifier; give the URL clients "
            "reach blendmesh at, e.g. https://blend.example.com/mcp (no #fragment)"
        )
    return url


def parse_subjects(entries: Iterable[str], where: str) -> dict[str, str]:
    """``subject=user`` entries; blank lines and ``#`` comments are skipped. A subject may
    hold ``=`` (user names cannot), so the last one splits."""
    pairs: dict[str, str] = {}
    for raw in entries:
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        subject, sep, user = (part.strip() for part in entry.rpartition("="))
        if not sep or not subject or not user:
            raise SettingsError(f"{where} has an entry {entry[:80]!r} that is not subject=user")
        try:
            check_name(user)
        except UsersFileError as exc:
            raise SettingsError(f"{where}: {exc}") from None
        if pairs.setdefault(subject, user) != user:
            raise SettingsError(f"{where} maps subject {subject[:80]!r} to two users")
        if len(pairs) > MAX_SUBJECTS:
            raise SettingsError(f"{where} maps more than {MAX_SUBJECTS} subjects")
    return pairs


def _file_lines(path: str) -> list[str]:
    try:
        with Path(path).open("rb") as src:
            data = src.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SettingsError(f"{SUBJECTS_FILE}={path}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise SettingsError(f"{SUBJECTS_FILE}={path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode().splitlines()
    except UnicodeDecodeError:
        raise SettingsError(f"{SUBJECTS_FILE}={path} is not UTF-8 text") from None


def _listed(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.strip() for e in env.get(name, "").split(",") if e.strip()))


def _algorithms(env: Mapping[str, str]) -> tuple[str, ...]:
    chosen = _listed(env, ALGORITHMS) or ASYMMETRIC
    wrong = [alg for alg in chosen if alg not in ASYMMETRIC]
    if wrong:
        raise SettingsError(
            f"{ALGORITHMS} names {', '.join(w[:20] for w in wrong)}, which blendmesh does not "
            f"accept; choose from {', '.join(ASYMMETRIC)} (signatures by a public key only)"
        )
    return chosen


def _leeway(env: Mapping[str, str]) -> int:
    raw = env.get(LEEWAY, "").strip()
    if not raw:
        return DEFAULT_LEEWAY
    if not raw.isdigit() or int(raw) > MAX_LEEWAY:
        raise SettingsError(f"{LEEWAY}={raw[:20]!r} must be whole seconds from 0 to {MAX_LEEWAY}")
    return int(raw)


def _scopes(env: Mapping[str, str]) -> tuple[str, ...]:
    scopes = tuple(dict.fromkeys(env.get(SCOPES, "").split()))
    bad = [s for s in scopes if not s.isprintable() or '"' in s or "\\" in s]
    if bad or len(scopes) > MAX_SCOPES:
        raise SettingsError(
            f"{SCOPES} must be at most {MAX_SCOPES} scope names separated by spaces, "
            "without quotes or backslashes"
        )
    return scopes


def oauth_settings(env: Mapping[str, str]) -> OAuthSettings | None:
    """The settings, or None when BLENDMESH_OAUTH_ISSUER is unset (static tokens only)."""
    issuer = env.get(ISSUER, "").strip()
    others = [n for n in (RESOURCE, SUBJECTS, SUBJECTS_FILE) if env.get(n, "").strip()]
    if not issuer:
        if others:
            raise SettingsError(f"{others[0]} is set but {ISSUER} is not; set both, or neither")
        return None
    resource = env.get(RESOURCE, "").strip()
    if not resource:
        raise SettingsError(
            f"{ISSUER} is set but {RESOURCE} is not; set it to the URL clients reach "
            "blendmesh at (the audience its tokens must name), e.g. https://blend.example.com/mcp"
        )
    claim = env.get(SUBJECT_CLAIM, "").strip() or "sub"
    if len(claim) > 128 or not claim.isprintable():
        raise SettingsError(f"{SUBJECT_CLAIM} must be a claim name of at most 128 characters")
    subjects = parse_subjects(env.get(SUBJECTS, "").split(","), SUBJECTS)
    path = env.get(SUBJECTS_FILE, "").strip()
    if path:
        for subject, user in parse_subjects(_file_lines(path), SUBJECTS_FILE).items():
            if subjects.setdefault(subject, user) != user:
                raise SettingsError(
                    f"{SUBJECTS} and {SUBJECTS_FILE} map subject {subject[:80]!r} to two users"
                )
    return OAuthSettings(
        issuer=check_issuer(issuer),
        resource=check_resource(resource),
        subject_claim=claim,
        subjects=subjects,
        scopes=_scopes(env),
        algorithms=_algorithms(env),
        leeway=_leeway(env),
    )
