"""Test doubles that speak real protocols (the fake LLM server), shared by the test suite."""
