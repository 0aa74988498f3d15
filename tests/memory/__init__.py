"""Tests of ``obsmem.memory``: parsers, atomic writes, the lock, the ledger and the store.

A package (rather than loose modules) so that its test file names never clash with another
folder's under pytest's default import mode.
"""
