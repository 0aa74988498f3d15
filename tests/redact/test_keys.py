"""The key-assignment helpers of redaction (``obsmem.redact.keys``)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from obsmem.redact import redact
from obsmem.redact.keys import looks_random

# A Cloudflare-style key with a "~" in it: letters and digits the version pattern could split in
# exponentially many ways before failing on the "~".
_ALMOST_A_VERSION = (
    "v1.0-153e30e3338777df8afbf23c-1ed4346aebad4aa73311c887df774f3f07e2f6a272d6803d6deec23175b"
    "1ed4346aebad4aa73311c887df774f3f07e2f6a272d6803d6deec23175b~d0a80a61e872d7c32e294bc9ae8f"
)


@contextmanager
def _no_hang(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: a guard far above the microseconds the work takes, not a speed
    figure."""

    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_a_value_that_almost_reads_as_a_version_is_judged_without_backtracking() -> None:
    with _no_hang(30):
        assert looks_random(_ALMOST_A_VERSION)
        out = redact(f'{{"cloudflare_origin_ca_key": "{_ALMOST_A_VERSION}", "retries": 3}}')
    assert _ALMOST_A_VERSION not in out


@pytest.mark.parametrize("version", ["v2.10.3-rc1", "1.2.3", "3.11.7+local.2", "2026.12.01-b4"])
def test_versions_still_do_not_look_random(version: str) -> None:
    assert not looks_random(version)


# A Kubernetes Secret's data and other YAML: the value is base64 with its "=" padding, and the
# "=" must not read as the start of a value after a type annotation (``password: str = "x"``).
@pytest.mark.parametrize(
    "text",
    [
        "data:\n  password: cHUzdUR4WVlNZkdteldrcEFlUGM=\n",
        "password: cHUzdUR4WVlNZkdteldrcEFlUGM=",
        "db_password: cHUzdUR4WVlNZkdteldrcEFlUGM=",
        "client_secret: cHUzdUR4WVlNZkdteldrcEFlUGM=\nnext: 1",
        "api_key: c2VjcmV0LXRva2VuLTEyMzQ1Njc4OTA=  # base64",
    ],
)
def test_a_colon_value_ending_in_base64_padding_is_redacted(text: str) -> None:
    value = text.split(": ", 1)[1].split()[0]
    assert value not in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        'password: str = "pu3uDxYYMfGmzWk"',
        "password: str='pu3uDxYYMfGmzWk'",
        "password: Optional[str] = 'pu3uDxYYMfGmzWk'",
    ],
)
def test_an_annotated_assignment_still_redacts_its_value(text: str) -> None:
    assert "pu3uDxYYMfGmzWk" not in redact(text)
