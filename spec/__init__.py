"""Package data: the spec of memspec (JSON files loaded through importlib.resources)."""
