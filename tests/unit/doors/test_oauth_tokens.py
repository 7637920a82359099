"""Judging an access token (``services/doors/gateway/oauth/tokens.py``) with keys made here.

Each refusal is the one a hostile caller tries first: a token signed by nobody, by a
public key used as an HMAC secret, by a key of another family, for another audience or
issuer, expired, not yet valid, or altered after signing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from services.doors.gateway.oauth.settings import OAuthSettings
from services.doors.gateway.oauth.tokens import (
    MAX_TOKEN_CHARS,
    ScopeMissing,
    TokenRefused,
    claims_of,
    header_of,
    keys_of,
    looks_like_jwt,
    user_of,
)

ISSUER = "https://issuer.example"
RESOURCE = "https://blend.example/mcp"
RULES = OAuthSettings(issuer=ISSUER, resource=RESOURCE, subjects={"client-ana": "ana"})
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def public_jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    family = jwt.algorithms.RSAAlgorithm if alg[:2] in ("RS", "PS") else jwt.algorithms.ECAlgorithm
    jwk: dict[str, Any] = json.loads(family.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


RSA_JWK = public_jwk(RSA_KEY, "rsa-1", "RS256")
EC_JWK = public_jwk(EC_KEY, "ec-1", "ES256")


def claims(**changed: Any) -> dict[str, Any]:
    now = int(time.time())
    found = {"iss": ISSUER, "aud": RESOURCE, "sub": "client-ana", "iat": now, "exp": now + 300}
    found.update(changed)
    return {k: v for k, v in found.items() if v is not None}


def signed(
    payload: dict[str, Any], key: Any = RSA_KEY, alg: str = "RS256", kid: str = "rsa-1"
) -> str:
    return jwt.encode(payload, key, algorithm=alg, headers={"kid": kid, "typ": "at+jwt"})


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def judged(token: str, rules: OAuthSettings = RULES, jwk: dict[str, Any] = RSA_JWK) -> str:
    header = header_of(token, rules)
    return user_of(claims_of(token, header, jwk, rules), rules)


def test_token_when_signed_by_the_issuers_key_for_the_resource_is_its_subjects_user() -> None:
    assert judged(signed(claims())) == "ana"
    assert judged(signed(claims(), EC_KEY, "ES256", "ec-1"), jwk=EC_JWK) == "ana"


def test_token_when_its_audience_is_a_list_naming_the_resource_is_accepted() -> None:
    assert judged(signed(claims(aud=["https://other.example", RESOURCE]))) == "ana"


def test_token_when_the_resource_has_no_path_takes_it_with_or_without_the_slash() -> None:
    bare = OAuthSettings(**{**RULES.__dict__, "resource": "https://blend.example"})
    for aud in ("https://blend.example", "https://blend.example/"):
        assert judged(signed(claims(aud=aud)), bare) == "ana"
    with pytest.raises(TokenRefused, match="another audience"):
        judged(signed(claims(aud="https://blend.example/mcp")), bare)


def test_token_when_expired_is_refused_saying_so() -> None:
    with pytest.raises(TokenRefused, match="expired"):
        judged(signed(claims(exp=int(time.time()) - 120)))


def test_token_when_expired_within_the_leeway_is_still_accepted() -> None:
    assert judged(signed(claims(exp=int(time.time()) - 5))) == "ana"
    strict = OAuthSettings(**{**RULES.__dict__, "leeway": 0})
    with pytest.raises(TokenRefused, match="expired"):
        judged(signed(claims(exp=int(time.time()) - 5)), strict)


def test_token_when_not_valid_yet_is_refused() -> None:
    with pytest.raises(TokenRefused, match="not valid yet"):
        judged(signed(claims(nbf=int(time.time()) + 600)))


def test_token_when_for_another_audience_is_refused_naming_the_resource_to_ask_for() -> None:
    with pytest.raises(TokenRefused, match=f"resource={RESOURCE}"):
        judged(signed(claims(aud="https://other.example")))


def test_token_when_from_another_issuer_is_refused() -> None:
    with pytest.raises(TokenRefused, match=f"not issued by {ISSUER}"):
        judged(signed(claims(iss="https://evil.example")))


@pytest.mark.parametrize("claim", ["exp", "aud", "iss"])
def test_token_when_a_required_claim_is_missing_is_refused(claim: str) -> None:
    with pytest.raises(TokenRefused, match=claim):
        judged(signed(claims(**{claim: None})))


def test_token_when_its_payload_is_altered_after_signing_is_refused() -> None:
    head, _, sig = signed(claims(sub="client-ben")).split(".")
    forged = b64(json.dumps(claims()).encode())
    with pytest.raises(TokenRefused, match="signature does not verify"):
        judged(f"{head}.{forged}.{sig}")


def test_token_when_its_signature_is_altered_is_refused() -> None:
    head, body, sig = signed(claims()).split(".")
    raw = bytearray(base64.urlsafe_b64decode(sig + "=="))
    raw[10] ^= 0x01
    with pytest.raises(TokenRefused, match="signature does not verify"):
        judged(f"{head}.{body}.{b64(bytes(raw))}")


def test_token_when_alg_none_is_refused_before_any_key_is_used() -> None:
    head = b64(json.dumps({"alg": "none", "kid": "rsa-1"}).encode())
    body = b64(json.dumps(claims()).encode())
    with pytest.raises(TokenRefused, match="alg 'none'"):
        header_of(f"{head}.{body}.", RULES)


def test_token_when_hmac_signed_with_the_public_key_as_secret_is_refused() -> None:
    # The classic confusion: the issuer's public key, which anyone has, as an HS256 secret.
    pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    head = b64(json.dumps({"alg": "HS256", "kid": "rsa-1"}).encode())
    body = b64(json.dumps(claims()).encode())
    sig = b64(hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest())
    with pytest.raises(TokenRefused, match="alg 'HS256'"):
        header_of(f"{head}.{body}.{sig}", RULES)


@pytest.mark.parametrize(("kid", "said"), [("k" * 257, "kid"), (7, "not a JWT"), ([1], "JWT")])
def test_token_when_its_kid_is_not_a_short_string_is_refused(kid: object, said: str) -> None:
    head = b64(json.dumps({"alg": "RS256", "kid": kid}).encode())
    with pytest.raises(TokenRefused, match=said):
        header_of(f"{head}.e30.sig", RULES)


def test_token_when_its_alg_does_not_fit_the_keys_family_is_refused() -> None:
    token = signed(claims(), EC_KEY, "ES256", "rsa-1")  # names the RSA key, signs with EC
    with pytest.raises(TokenRefused, match="does not fit"):
        judged(token)


def test_token_when_its_alg_is_not_among_the_configured_is_refused() -> None:
    only_es = OAuthSettings(**{**RULES.__dict__, "algorithms": ("ES256",)})
    with pytest.raises(TokenRefused, match="accepts ES256"):
        header_of(signed(claims()), only_es)


def test_token_when_not_a_jwt_or_too_long_is_refused_without_quoting_it() -> None:
    with pytest.raises(TokenRefused, match="not a JWT") as refused:
        header_of("not.a.jwt-secret", RULES)
    assert "secret" not in str(refused.value)
    assert not looks_like_jwt("static-token")
    with pytest.raises(TokenRefused, match=str(MAX_TOKEN_CHARS)):
        header_of("a." + "b" * MAX_TOKEN_CHARS + ".c", RULES)


def test_token_when_its_subject_is_not_mapped_is_refused_naming_the_setting() -> None:
    with pytest.raises(TokenRefused, match="BLENDMESH_OAUTH_SUBJECTS") as refused:
        judged(signed(claims(sub="client-mallory")))
    assert "client-mallory" in str(refused.value)


def test_token_when_the_subject_claim_is_configured_reads_that_claim() -> None:
    by_email = OAuthSettings(
        **{**RULES.__dict__, "subject_claim": "email", "subjects": {"ana@example.com": "ana"}}
    )
    assert judged(signed(claims(email="ana@example.com")), by_email) == "ana"
    with pytest.raises(TokenRefused, match="no email claim"):
        judged(signed(claims()), by_email)


@pytest.mark.clause("002-§errors.2")
def test_token_when_a_required_scope_is_missing_is_scope_missing() -> None:
    scoped = OAuthSettings(**{**RULES.__dict__, "scopes": ("blendmesh",)})
    assert judged(signed(claims(scope="openid blendmesh")), scoped) == "ana"
    assert judged(signed(claims(scp=["blendmesh"])), scoped) == "ana"
    with pytest.raises(ScopeMissing, match="scope=blendmesh"):
        judged(signed(claims(scope="openid")), scoped)


def test_keys_when_the_document_holds_secrets_private_or_encryption_keys_skips_them() -> None:
    private = {**RSA_JWK, "kid": "priv", "d": "secret"}
    document = {
        "keys": [
            RSA_JWK,
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            private,
            {**EC_JWK, "use": "enc", "kid": "enc"},
            "junk",
        ]
    }
    assert set(keys_of(document, "jwks")) == {"rsa-1"}
    with pytest.raises(ValueError, match="not a JWKS"):
        keys_of({"keys": "no"}, "jwks")
