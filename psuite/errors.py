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


# Packages that only some commands use, and the extra that installs them
# (pyproject.toml): `pip install psuite` is enough to measure and report.
OPTIONAL_PACKAGES = {
    "sqlalchemy": ("SQLAlchemy", "archive", "the experiment archive"),
    "psycopg": ("psycopg", "archive", "a PostgreSQL archive"),
    "matplotlib": ("matplotlib", "archive", "psbase's PNG and SVG charts"),
    "odf": ("odfpy", "archive", "perfbase's opendoc spreadsheets"),
    "plotly": ("plotly", "html", "HTML reports and charts"),
    "hatchet": ("llnl-hatchet", "hatchet", "hatchet GraphFrames"),
    "thicket": ("llnl-thicket", "hatchet", "Thicket"),
}


def missing_extra(exc: ModuleNotFoundError) -> PsuiteError | None:
    """The one-line error for an optional package that is not installed, or
    None when the missing module is not one of them."""
    top = (exc.name or "").split(".")[0]
    if top not in OPTIONAL_PACKAGES:
        return None
    package, extra, feature = OPTIONAL_PACKAGES[top]
    return UsageError(f"the Python package {package} ({feature}) is not installed: pip install 'psuite[{extra}]'")


def require_extra(module: str) -> None:
    """Refuse now, before any work, when an optional package is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise missing_extra(ModuleNotFoundError(name=module))
