"""Package data: the schemas of memspec (JSON files loaded through importlib.resources)."""
