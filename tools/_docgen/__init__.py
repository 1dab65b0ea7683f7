"""The spec website's generator (used by tools/gen_docs.py).

Every module turns one kind of repository data into Markdown pages (or raw
files) for MkDocs: pure functions from inputs to ``{docs-relative path: bytes}``,
so the same inputs always give the same bytes.
"""
