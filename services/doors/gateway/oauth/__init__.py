"""OAuth 2.1 for ``/mcp`` and ``/api``: blendmesh as a resource server (docs/adr/0050).

``settings`` reads the BLENDMESH_OAUTH_* variables, ``tokens`` judges an access token
against keys it is given (no I/O), ``keys`` fetches and caches the issuer's JWKS,
``verifier`` joins them into "which user is this token", and ``resource`` serves the
protected-resource metadata (RFC 9728) and writes the ``WWW-Authenticate`` challenge.
"""
