"""Blitz: an agent session server."""
