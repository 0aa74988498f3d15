"""Startup context: what a new agent session is told about the user and their work.

``prepare`` (after observe and reflect) turns memory into ``profile.md``, ``active.md``, a
compact ``context.json`` and what ``om context`` prints from it for the usual requests, rendered
ahead; ``rendered`` (at every session start) prints that when it holds the request, and
``startup`` otherwise reads the JSON, chooses what fits the token budget and prints what the
agent's hook expects. They are kept apart so the hot path imports nothing heavy.
"""
