"""One module per fragment; each defines ``FRAGMENT``. Discovered by boosttune.space.registry."""
