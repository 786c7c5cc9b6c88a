"""What every command-line front end shares: one-line errors with exit
status 2 and safe input and output files.  (The shared argparse parser is
in cli_parser.)

Inputs are regular files of at most MAX_INPUT_BYTES: devices, named pipes
and sockets are refused before anything is read from them.

Outputs are written to a temporary file beside the final name and moved
into place only once they are complete (atomic_output): a failure (a full
disk, an I/O error, an interruption) leaves nothing behind, and an
existing file is replaced only with force, and never when it is an input:
every file opened through open_input (or noted with note_read) is one,
whatever named it (a companion beside a document, a metric file), and
check_outputs refuses it as an output.  Standard output goes through
write_stdout, whose failures (a full disk, a closed descriptor) are one
line too; a reader that goes away (`| head`) is not an error.

Warnings are held (hold_warning) until the command's outcome is known: a
command that ends is followed by them, in order; one that fails says its
one error line alone."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from psuite.errors import InputError, OutputError, PsuiteError, UsageError, missing_extra

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a few ms of every command's start-up
    from typing import IO

MAX_INPUT_BYTES = 2 * 1024**3  # one input document; a 1,000,000-event report is about 120 MB

_SHOWN = {c: f"\\x{c:02x}" for c in [*range(32), 0x7F, 0x85]} | {9: "\t", 10: "\\n", 13: "\\r",
                                                                  0x2028: "\\u2028", 0x2029: "\\u2029"}


_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@]*)@")


def hide_userinfo(text: str) -> str:
    """text with the credentials of every URL in it hidden:
    http://user:pass@host/ becomes http://user:***@host/ (a name alone,
    often a token, becomes ***)."""
    if "@" not in text:
        return text

    def hidden(m: re.Match) -> str:
        user, sep, _ = m.group(2).partition(":")
        return f"{m.group(1)}{user}:***@" if sep else f"{m.group(1)}***@"

    return _USERINFO.sub(hidden, text)


def one_line(text: str) -> str:
    """text with line breaks and control characters shown as escapes, so a
    message stays one line whatever file name or server answer it quotes,
    and with no URL's password in it (hide_userinfo)."""
    return hide_userinfo(str(text)).translate(_SHOWN)


def size_text(n: int) -> str:
    for unit, name in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if n >= unit:
            return f"{n / unit:g} {name}"
    return f"{n} bytes"


_held: list[str] = []  # the running command's warning lines, said once it has not failed


def progress(tool: str, what: str, unit: str) -> Callable[[int, int], None] | None:
    """A progress line on stderr when it is a terminal, cleared at the end:
    show(done, total); None elsewhere (a log or a pipe gets no carriage returns)."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        sys.stderr.write(f"\r{tool}: {what} {done:,}/{total:,} {unit}" + ("\r\033[K" if done == total else ""))
        sys.stderr.flush()

    return show


def hold_warning(line: str) -> None:
    """A warning line (e.g. "psprocess: warning: ..."), said on stderr when
    the command run by run_cli ends without an error, or earlier by
    say_warnings; never when it fails, whose stderr is its one error line."""
    _held.append(line)


def say_warnings() -> None:
    """Say the warnings held so far, in order: the command has not failed,
    or it has done the work they are about (psprocess: "wrote FILE")."""
    lines = _held[:]
    _held.clear()
    for line in lines:
        _say_line(line)


def run_cli(tool: str, main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """Call main; turn psuite's errors into 'tool: message' and exit 2,
    the held warnings (hold_warning) said only when there is none."""
    try:
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's --help, --version and usage errors: their output must arrive too
            flush_stdout()
            if exc.code in (0, None):
                say_warnings()
            raise
        flush_stdout()
        say_warnings()  # whatever the status: a command's own verdict (compare: 1, differs) is no failure
        return status
    except PsuiteError as exc:
        _say(tool, str(exc))
        return exc.exit_status
    except ModuleNotFoundError as exc:
        # An optional package (an extra) imported where a command needs it
        error = missing_extra(exc)
        if error is None:
            raise
        _say(tool, str(error))
        return error.exit_status
    except KeyboardInterrupt:
        _say(tool, "interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours.
        _silence_stdout()
        say_warnings()  # stderr is still there: the report the reader saw is what they warn about
        return 0
    except MemoryError:
        _say(tool, "out of memory; give fewer or smaller inputs, or raise the memory limit (ulimit -v)")
        return 2
    finally:
        _held.clear()  # a failure's (or the next in-process run starts with none)


def _say(tool: str, message: str) -> None:
    _say_line(f"{tool}: {one_line(message)}")


def _say_line(line: str) -> None:
    if sys.stderr is not None:
        print(line, file=sys.stderr)


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's final
    flush of what is still buffered cannot fail again."""
    if sys.stdout is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


_WRITE_PROBLEMS = {
    errno.ENOSPC: "no space left on the device; free some space or write to another file system",
    errno.EDQUOT: "disk quota exceeded; free some space or write to another file system",
    errno.EFBIG: "the file is too large for this file system or for ulimit -f; write elsewhere",
    errno.EACCES: "permission denied; choose a place you can write to",
    errno.EPERM: "permission denied; choose a place you can write to",
    errno.EROFS: "the file system is read-only; choose another place",
    errno.ENOENT: "its directory does not exist",
    errno.EBADF: "it is not open for writing; redirect it to a file (> FILE) or use -o FILE",
}


def write_problem(what: str, exc: OSError) -> str:
    """One line for a failed write of `what` (a path or standard output)."""
    problem = _WRITE_PROBLEMS.get(exc.errno) or \
        f"{(exc.strerror or str(exc)).lower()}; check the device and the file system"
    return f"cannot write {what}: {problem}"


def flush_stdout() -> None:
    """Flush standard output; its failures become one OutputError line."""
    out = sys.stdout
    if out is None:
        return
    try:
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _silence_stdout()
        raise OutputError(write_problem("standard output", exc)) from None
    except ValueError:  # closed by someone
        pass


def write_stdout(text: str) -> None:
    """text to standard output, flushed; one line when it cannot be written
    (closed, full disk), and BrokenPipeError for run_cli when the reader
    went away."""
    if sys.stdout is None:
        raise OutputError("standard output is closed; redirect it to a file (> FILE) or use -o FILE")
    try:
        sys.stdout.write(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        _silence_stdout()
        raise OutputError(write_problem("standard output", exc)) from None
    flush_stdout()


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a file"


# ---------------------------------------------------------------- outputs


_READ: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) of every file this run read -> the name it was read by


def note_read(path: str, st: os.stat_result | None = None) -> None:
    """Remember that this run reads the file `path` (st: its fstat, when
    open): check_outputs never lets an output replace it."""
    try:
        st = os.stat(path) if st is None else st
    except OSError:
        return
    _READ.setdefault((st.st_dev, st.st_ino), path)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def forget_reads() -> None:
    """A new run of a command in this process: no file read yet."""
    _READ.clear()


def check_outputs(paths: Sequence[str], force: bool = False, inputs: Iterable[str] = ()) -> None:
    """Refuse, before anything is computed or written, output names that
    cannot be used: the same name twice, a missing directory, a directory,
    an existing file without force, a device or pipe even with force, and
    an input even with force: one of `inputs` (the files the run is going
    to read, by identity or, for a name that does not exist yet, by path)
    or a file the run has read already (note_read)."""
    seen: dict[str, str] = {}
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            also = f" (also as {seen[key]})" if seen[key] != path else ""
            raise UsageError(f"{path} would be written twice{also}; give each output its own name")
        seen[key] = path
    _check_not_inputs(paths, inputs)
    for path in paths:
        _check_output(path, force)


def _check_not_inputs(paths: Sequence[str], inputs: Iterable[str]) -> None:
    read = {key: name for key, name in _READ.items() if _identity(name) == key}  # a file gone since: its
    # inode may be another file's now
    by_path: dict[str, str] = {}
    for name in inputs:
        if not name or "://" in name:
            continue
        by_path.setdefault(os.path.realpath(name), name)
        key = _identity(name)
        if key is not None:
            read.setdefault(key, name)
    for path in paths:
        key = _identity(path)  # None: not there yet (or a dangling link): the name is compared
        name = read.get(key) if key is not None else None
        if name is None:
            name = by_path.get(os.path.realpath(path))
        if name is not None:
            also = f" (read as {name})" if os.path.abspath(name) != os.path.abspath(path) else ""
            raise UsageError(f"{path} is also an input{also}; write the output to another name")


def _check_output(path: str, force: bool) -> None:
    if not path:
        raise UsageError("an output file name is empty; give a file name")
    directory = os.path.dirname(path) or "."
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise UsageError(f"cannot write {path}: {directory} is not a directory") from None
    except OSError as exc:
        raise OutputError(write_problem(path, exc)) from None
    if st is None:
        if not os.path.isdir(directory):
            if os.path.lexists(directory):
                raise UsageError(f"cannot write {path}: {directory} is not a directory")
            raise UsageError(f"cannot write {path}: its directory does not exist")
    elif stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path} is a directory; give a file name")
    elif not force:
        raise UsageError(f"{path} exists; choose another name or pass --force to replace it")
    elif not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise UsageError(f"{path} is {_kind(st.st_mode)}; --force replaces files only, give a file name")
    if not os.access(directory, os.W_OK):
        raise OutputError(f"cannot write {path}: permission denied; choose a place you can write to")


class _Output:
    """A new temporary file beside `path`; write errors name `path`."""

    def __init__(self, path: str, binary: bool) -> None:
        import tempfile

        self.path, self.file = path, None
        directory, name = os.path.split(path)
        try:
            fd, self.temp = tempfile.mkstemp(prefix=f".{name[:100]}.", suffix=".part", dir=directory or ".")
        except OSError as exc:
            raise OutputError(write_problem(path, exc)) from None
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            self.file = os.fdopen(fd, "wb") if binary else \
                os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape")
        except BaseException:
            if self.file is None:
                os.close(fd)
            self.discard()
            raise

    def write(self, data) -> int:
        try:
            return self.file.write(data)
        except OSError as exc:
            raise OutputError(write_problem(self.path, exc)) from None

    def __getattr__(self, name: str):  # tell, flush ... of the file (tarfile asks)
        return getattr(self.file, name)

    def finish(self) -> None:
        """Everything on the disk (a full disk may only say so now)."""
        try:
            self.file.flush()
            try:
                os.fsync(self.file.fileno())
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.EROFS, errno.ENOTSUP):
                    raise
            self.file.close()
        except OSError as exc:
            raise OutputError(write_problem(self.path, exc)) from None

    def discard(self) -> None:
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
        try:
            os.unlink(self.temp)
        except OSError:
            pass


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _place(temp: str, path: str, force: bool) -> None:
    """temp under the name path: replacing what is there only with force."""
    try:
        if force:
            os.replace(temp, path)
            return
        try:
            os.link(temp, path)  # fails if path exists: never overwrites
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
                raise
            # no hard links on this file system: claim the name, then move over the claim
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            try:
                os.replace(temp, path)
            except BaseException:
                os.unlink(path)
                raise
    except FileExistsError:
        raise UsageError(f"{path} exists; choose another name or pass --force to replace it") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; give a file name") from None
    except OSError as exc:
        raise OutputError(write_problem(path, exc)) from None


@contextmanager
def _cleanup_on_termination() -> Iterator[None]:
    """SIGTERM and SIGHUP (when not ignored) end the program through
    SystemExit, so that the temporary files are removed on the way out."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    old = {}
    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) == signal.SIG_DFL:
            old[s] = signal.signal(s, stop)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextmanager
def atomic_outputs(paths: Sequence[str], force: bool = False,
                   binary: bool | Sequence[bool] = False) -> Iterator[list[IO]]:
    """New output files, written together: each is a temporary file beside
    its name until the block ends without an error; then all are moved into
    place (linked, so never over an existing file, or replacing it with
    force).  On any failure nothing is left behind; errors are one line
    naming the file."""
    kinds = [binary] * len(paths) if isinstance(binary, bool) else list(binary)
    check_outputs(paths, force)
    outputs: list[_Output] = []
    placed: list[str] = []
    with _cleanup_on_termination():
        try:
            for path, b in zip(paths, kinds, strict=True):
                outputs.append(_Output(path, b))
            yield outputs  # type: ignore[misc]
            for o in outputs:
                o.finish()
            for o in outputs:
                _place(o.temp, o.path, force)
                placed.append(o.path)
            placed = []
        finally:
            for o in outputs:
                o.discard()
            if not force:  # a later one failed: the earlier ones were new, take them back
                for path in placed:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass


@contextmanager
def atomic_output(path: str, force: bool = False, binary: bool = False) -> Iterator[IO]:
    """One new output file (see atomic_outputs)."""
    with atomic_outputs([path], force, binary) as (f,):
        yield f


def write_output(path: str | None, text: str | Iterable[str], force: bool = False) -> None:
    """text (a string, or its pieces in order) to the file path (see
    atomic_output), or to standard output."""
    pieces = (text,) if isinstance(text, str) else text
    if path:
        with atomic_output(path, force) as f:
            for piece in pieces:
                f.write(piece)
    else:
        for piece in pieces:
            write_stdout(piece)


# ----------------------------------------------------------------- inputs


def open_input(path: str, what: str = "", error: type[PsuiteError] = InputError,
               limit: int | None = None) -> IO[bytes]:
    """An input file opened for binary reading, with one-line errors: only
    regular files of at most `limit` bytes (MAX_INPUT_BYTES) are opened;
    `what` (e.g. "configuration") is put before the path in messages."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    name = f"{what} {path}" if what else path
    try:
        _check_input(os.stat(path), name, limit, error)
        # O_NONBLOCK: should the name have become a pipe since, opening it does not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        f = os.fdopen(fd, "rb")
        try:
            st = os.fstat(fd)
            _check_input(st, name, limit, error)
        except BaseException:
            f.close()
            raise
        note_read(path, st)
        return f
    except OSError as exc:
        raise error(read_problem(name, exc)) from None


def read_input(path: str, what: str = "", error: type[PsuiteError] = InputError,
               limit: int | None = None) -> bytes:
    """Whole contents of an input file (see open_input)."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    name = f"{what} {path}" if what else path
    with open_input(path, what, error, limit) as f:
        try:
            data = f.read()
        except OSError as exc:
            raise error(read_problem(name, exc)) from None
        except MemoryError:
            raise error(f"out of memory reading {name}; free memory or raise the memory limit "
                        "(ulimit -v)") from None
    if len(data) > limit:  # it grew while being read
        raise error(f"{name} is larger than {size_text(limit)}, the limit for one input; give a smaller file")
    return data


def read_problem(name: str, exc: OSError) -> str:
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return f"{name}: no such file"
    if isinstance(exc, IsADirectoryError):
        return f"{name} is a directory; give a file"
    if isinstance(exc, PermissionError):
        return f"cannot read {name}: permission denied; check its permissions"
    return f"cannot read {name}: {(exc.strerror or str(exc)).lower()}; check the file and its device"


def _check_input(st: os.stat_result, name: str, limit: int, error: type[PsuiteError]) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{name} is a directory; give a file")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name} is not a regular file ({_kind(st.st_mode)}); give a regular file")
    if st.st_size > limit:
        raise error(f"{name} is larger than {size_text(limit)}, the limit for one input; give a smaller file")
