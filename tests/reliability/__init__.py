"""Reliability and security: hostile input, concurrent writers, crashes, tampering, full and
read-only disks, planted links and the MCP server's paths."""
