"""The scene described for the guardians, kept part by part beside its digests."""
