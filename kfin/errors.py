"""The errors kfin reports in one line, and the exit code of each (docs/commands/index.md, "Exit codes")."""

from enum import IntEnum

from kfin.model import JSON


class ExitCode(IntEnum):
    OK = 0
    FOUND = 1  # with --exit-code: something is stuck
    USAGE = 2  # bad flags or arguments
    CONFIG = 3  # no kubeconfig, unknown context, unreadable kubeconfig
    UNREACHABLE = 4  # the API server cannot be reached (refused, DNS, timeout)
    AUTH = 5  # TLS verification or authentication (401) failed
    FORBIDDEN = 6  # RBAC denied a verb kfin needs
    NOT_FOUND = 7  # unknown kind, or the object does not exist
    PARTIAL = 8  # some resource types could not be read: the result is incomplete
    API = 9  # the API server refused the request for another reason
    REFUSED = 10  # kfin refused a removal: a finalizer still holds (see --force), or the object is live
    INTERNAL = 70  # a bug in kfin (KFIN_DEBUG=1 shows the traceback)
    INTERRUPTED = 130  # Ctrl-C


class KfinError(Exception):
    exit_code = ExitCode.API

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ConfigError(KfinError):
    exit_code = ExitCode.CONFIG


class UnreachableError(KfinError):
    exit_code = ExitCode.UNREACHABLE


class AuthError(KfinError):
    exit_code = ExitCode.AUTH


class ForbiddenError(KfinError):
    exit_code = ExitCode.FORBIDDEN

    def __init__(self, message: str, verb: str = "", resource: str = "", namespace: str | None = None):
        super().__init__(message)
        self.verb, self.resource, self.namespace = verb, resource, namespace


class NotFoundError(KfinError):
    exit_code = ExitCode.NOT_FOUND

    def __init__(self, message: str, kind: str = "", name: str = ""):
        """`kind` and `name`: what the server says was not found (its Status details), which is not
        always the object asked for: a write into a deleted namespace names the namespace."""
        super().__init__(message)
        self.kind, self.name = kind, name


class InterruptedByUserError(KfinError):
    """Ctrl-C, with what kfin knows of the work it stopped (the write in flight, and what a read found)."""

    exit_code = ExitCode.INTERRUPTED


class UsageError(KfinError):
    exit_code = ExitCode.USAGE


class APIError(KfinError):
    exit_code = ExitCode.API

    def __init__(self, message: str, status: int = 0, reason: str = "", causes: tuple[JSON, ...] = ()):
        """`causes`: the Status's details.causes ({reason, message, field}), which a StorageReadError fills with
        the storage keys it could not read."""
        super().__init__(message)
        self.status, self.reason, self.causes = status, reason, causes
