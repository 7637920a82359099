"""The conformance table: spec clauses (docs/conformance/clauses.toml), the tests that name them
with ``@pytest.mark.clause``, and docs/conformance.md generated from both."""
