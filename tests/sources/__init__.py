"""Tests of ``obsmem.sources``: the transcript readers, redaction and capture cursors.

A package (rather than loose modules) so that its test file names never clash with another
folder's under pytest's default import mode, and so that the readers' tests can import their
shared harness (``golden``) by a relative import.
"""
