"""Typed errors.  Library code raises these; only the command-line front
ends turn them into one "tool: message" line and an exit status."""


class PsuiteError(Exception):
    """Base class; the message is one line naming the problem and the fix."""

    exit_status = 2


class UsageError(PsuiteError):
    """Wrong options or arguments."""


class InputError(PsuiteError):
    """A file or URL that is missing, unreadable or malformed."""


class OutputError(PsuiteError):
    """An output file or standard output that cannot be written (no space,
    no permission, closed)."""


class ConfigError(InputError):
    """A configuration or metric definition that cannot be used."""


class EventError(PsuiteError):
    """An event name that does not exist."""


class NativeLibraryError(PsuiteError):
    """The C library is missing or does not match this package."""
