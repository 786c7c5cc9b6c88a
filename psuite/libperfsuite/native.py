"""Locating and loading psuite's C libraries through cffi: the runtime
(libpshwpc.so) and the DWARF decoder psprocess uses (libpsdwarf.so)."""

from __future__ import annotations

import functools
import os

from psuite.errors import NativeLibraryError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing would slow every command's start-up
    from typing import Any


_NATIVE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_native")


def library_path() -> str:
    """The shared object psrun preloads and the Python API calls."""
    return os.path.join(_NATIVE_DIR, "libpshwpc.so")


def decoder_path() -> str:
    """The DWARF decoder psprocess loads (never injected into programs)."""
    return os.path.join(_NATIVE_DIR, "libpsdwarf.so")


def include_dir() -> str:
    """Directory holding the public C header pshwpc.h."""
    return _NATIVE_DIR


@functools.lru_cache(maxsize=1)
def load() -> tuple[Any, Any]:
    """(ffi, lib) for the runtime; raises NativeLibraryError if it was not built."""
    return _open(library_path())


@functools.lru_cache(maxsize=1)
def load_decoder() -> tuple[Any, Any]:
    """(ffi, lib) for the DWARF decoder; raises NativeLibraryError if it was not built."""
    return _open(decoder_path())


def _open(path: str) -> tuple[Any, Any]:
    try:
        from psuite._native._ffi import ffi
    except ImportError as exc:
        raise NativeLibraryError(
            "psuite's C library binding is missing; reinstall with 'pip install .' to build it"
        ) from exc
    if not os.path.exists(path):
        raise NativeLibraryError(f"{path} is missing; reinstall with 'pip install .' to build it")
    try:
        return ffi, ffi.dlopen(path)
    except OSError as exc:
        raise NativeLibraryError(f"cannot load {path}: {exc}") from exc


def text(ffi: Any, cdata: Any) -> str:
    """A C string (char array or pointer) as str; '' for NULL."""
    if cdata == ffi.NULL:
        return ""
    return ffi.string(cdata).decode("utf-8", "replace")
