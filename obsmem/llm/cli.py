"""What the two providers that run an agent's own CLI share: one process at a time, killed at its
timeout, started where om's hooks and readers know it for om's own.

``claude-code`` (:mod:`obsmem.llm.claude_code`) and ``codex`` (:mod:`obsmem.llm.codex`) spend
the user's Claude or ChatGPT subscription instead of an API key. An observer that starts agent
processes can go wrong in ways an HTTP client cannot, so every call here:

- holds ``<state dir>/observer.lock`` (``flock``) while its process runs: one observer CLI at a
  time for the whole machine's om processes. A call that cannot take it within the timeout fails
  as retryable, and the observer falls back (``OM_FALLBACK``) instead of queueing processes;
- runs the CLI in its own process group and kills the group when ``OM_LLM_CLI_TIMEOUT_SECONDS``
  pass, so a hung CLI leaves nothing behind;
- goes through ``BaseProvider.complete``'s retries (backoff, at most two retries here, however
  high ``OM_LLM_MAX_RETRIES``: each attempt is a whole agent start), then a ``ProviderError``
  the observer answers with its fallback, so the cursor waits rather than storming;
- sets ``OM_OBSERVER_SESSION=1`` in the CLI's environment (om's hooks then do nothing) and starts
  it in ``<state dir>/observer``, a directory whose sessions the transcript readers skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from pathlib import Path

from obsmem import paths
from obsmem.errors import ProviderError
from obsmem.llm.base import BaseProvider, Completion, Failure, Hints, RetryPolicy
from obsmem.memory.atomic import ensure_dir, flock_until

__all__ = [
    "MAX_CLI_RETRIES",
    "CLIFailure",
    "CLIProvider",
    "classify_message",
    "observer_lock",
    "subscription_offer",
]

#: Most retries of one CLI call: each is a whole agent process, not one HTTP request.
MAX_CLI_RETRIES = 2
_TERM_GRACE = 2.0
_DETAIL_CHARS = 300


class CLIFailure(Exception):
    """One failed CLI run, described for the retry loop."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


def subscription_offer(environ: Mapping[str, str]) -> list[str]:
    """``om install``'s note when om would observe with its rules (no key, ``auto``) while an
    agent CLI that could observe on the user's subscription is on PATH. Never a silent switch:
    the CLIs spend the subscription's usage, which the user decides about."""
    from obsmem.settings import load_settings

    settings = load_settings(environ)
    if settings.llm_provider != "auto" or settings.effective_provider() != "none":
        return []
    found = [
        (program, name)
        for program, name in (("claude", "claude-code"), ("codex", "codex"))
        if shutil.which(program, path=environ.get("PATH"))
    ]
    if not found:
        return []
    where = settings.env_file or paths.env_file(environ)
    choices = " or ".join(f"OM_LLM_PROVIDER={name} (`{program}`)" for program, name in found)
    return [
        "no LLM API key is set, so om observes with its offline rules; to observe with the "
        f"agent CLI you are logged in to instead, set {choices} in {where} (it spends your "
        "subscription's usage: docs/providers.md)"
    ]


def classify_message(text: str) -> Failure:
    """A CLI's error message as a failure: limits and overload retry, login problems do not."""
    detail = " ".join(text.split())[:_DETAIL_CHARS]
    lowered = detail.lower()
    if any(word in lowered for word in ("login", "api key", "authenticat", "unauthori", "401")):
        return Failure("credentials", detail)
    if any(word in lowered for word in ("rate limit", "usage limit", "429", "quota")):
        return Failure("status", detail, status=429)
    if any(word in lowered for word in ("overloaded", "529", "503", "unavailable")):
        return Failure("status", detail, status=529)
    if "timed out" in lowered or "timeout" in lowered:
        return Failure("timeout", detail)
    return Failure("status", detail)  # no status: not retried


@contextlib.contextmanager
def observer_lock(path: Path, wait: float) -> Iterator[None]:
    """Hold the observer lock; a retryable ``ProviderError`` when another holds it ``wait`` s."""
    ensure_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not flock_until(fd, time.monotonic() + wait):
            raise ProviderError(
                f"another observer process has held {path} for {wait:g} s",
                "om runs one observer CLI at a time; it tries again on its next run",
                retryable=True,
            )
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _kill(process: subprocess.Popen[str]) -> None:
    """End the CLI and everything it started (its own process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=_TERM_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue


class CLIProvider(BaseProvider):
    """A provider whose one request is one run of an agent CLI, prompt on stdin."""

    #: The program run (found on PATH).
    program: str = ""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        timeout: float,
        policy: RetryPolicy,
        environ: Mapping[str, str],
    ) -> None:
        policy.max_retries = min(policy.max_retries, MAX_CLI_RETRIES)
        hints = Hints(
            auth=f"log in to the CLI once in a terminal ({self.program}), or choose another "
            "OM_LLM_PROVIDER",
            unreachable=f"check that `{self.program}` works in a terminal",
            endpoint=f"`{self.program}`",
            api=f"{self.program} JSON",
            not_found="check OM_LLM_MODEL: the CLI does not know that model",
        )
        super().__init__(name=name, model=model, timeout=timeout, policy=policy, hints=hints)
        self.environ = dict(environ)
        self.lock_path = paths.observer_lock_path(environ)
        self.workdir = paths.observer_dir(environ)

    @abstractmethod
    def argv(self, system: str, *, json_mode: bool) -> list[str]:
        """The command line, after the program."""

    @abstractmethod
    def stdin(self, system: str, user: str) -> str:
        """What the CLI reads as its prompt."""

    @abstractmethod
    def parse(self, stdout: str) -> Completion:
        """The completion in the CLI's output; ``CLIFailure`` when it reports an error."""

    def _classify(self, exc: Exception) -> Failure | None:
        return exc.failure if isinstance(exc, CLIFailure) else None

    def _complete_once(
        self, system: str, user: str, *, max_tokens: int, json_mode: bool
    ) -> Completion:
        del max_tokens  # neither CLI takes an output cap; the prompt asks for a short reply
        program = shutil.which(self.program, path=self.environ.get("PATH"))
        if program is None:
            raise ProviderError(
                f"{self.name}: `{self.program}` is not on PATH",
                "install it (and log in once), or choose another OM_LLM_PROVIDER",
                provider=self.name,
                model=self.model,
            )
        argv = [program, *self.argv(system, json_mode=json_mode)]
        with observer_lock(self.lock_path, self.timeout):
            stdout, stderr, code = self._run(argv, self.stdin(system, user))
        try:
            return self.parse(stdout)
        except CLIFailure:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            if code != 0:
                raise CLIFailure(classify_message(stderr or f"exit status {code}")) from exc
            raise CLIFailure(Failure("invalid", str(exc))) from exc

    def _run(self, argv: list[str], text: str) -> tuple[str, str, int]:
        ensure_dir(self.workdir)
        env = {**self.environ, paths.OBSERVER_SESSION_ENV: "1"}
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.workdir,
            env=env,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(text, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise CLIFailure(Failure("timeout", f"{self.program} killed")) from None
        except BaseException:
            _kill(process)
            raise
        return stdout, stderr, process.returncode

    def error(
        self, failure: Failure, attempts: int = 1, *, refused_wait: float | None = None
    ) -> ProviderError:
        """As the base class words it, except for a CLI that failed without a status."""
        if failure.kind == "timeout":
            return ProviderError(
                f"{self.name} ({self.model}): `{self.program}` gave no reply within "
                f"{self.timeout:g} s and was killed",
                "raise OM_LLM_CLI_TIMEOUT_SECONDS, or choose a faster OM_LLM_MODEL",
                provider=self.name,
                model=self.model,
                retryable=True,
            )
        if failure.kind == "status" and failure.status is None:
            return ProviderError(
                f"{self.name} ({self.model}): `{self.program}` failed: {failure.detail}",
                f"run `{self.program}` in a terminal to see what it needs",
                provider=self.name,
                model=self.model,
            )
        return super().error(failure, attempts, refused_wait=refused_wait)
