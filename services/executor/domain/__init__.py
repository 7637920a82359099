"""What the executor decides: spec 000's guarantees and spec 001's gate. No I/O of its own."""
