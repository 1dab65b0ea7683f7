"""Package data: the vectors of memspec (JSON files loaded through importlib.resources)."""
