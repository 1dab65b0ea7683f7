"""Reliability and security: hostile input, concurrent writers, crashes and tampering."""
