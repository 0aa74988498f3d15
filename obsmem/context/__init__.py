"""Startup context: what a new agent session is told about the user and their work.

``prepare`` (after observe and reflect) turns memory into ``profile.md``, ``active.md`` and a
compact ``context.json``; ``startup`` (at every session start) only reads that JSON, chooses what
fits the token budget and prints what the agent's hook expects. The two are kept apart so the hot
path imports nothing heavy.
"""
