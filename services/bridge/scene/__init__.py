"""The canonical snapshot of a scene and the hash over it, kept up to date by digests."""
