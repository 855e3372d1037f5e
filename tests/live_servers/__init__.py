"""Local test servers and a small test router for the live-annotation tests."""
