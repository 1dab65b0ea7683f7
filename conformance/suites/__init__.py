"""The kit's suites: run them with ``pytest --pyargs memspec.conformance --memspec-engine=NAME``."""
