"""Build of psuite's C libraries, the psrun launcher and the cffi binding.

csrc/runtime/ is compiled into libpshwpc.so, the runtime psrun preloads
into programs that never load Python (a plain shared object, not a Python
extension), installed as psuite/_native/libpshwpc.so with the public header
pshwpc.h beside it.  csrc/decoder/ is compiled into libpsdwarf.so, the
DWARF decoder only psprocess loads, so the injected library carries nothing
it does not run.  cffi emits the ABI-mode binding module
psuite/_native/_ffi.py from the declarations in
psuite/libperfsuite/cdefs.py, so importing it needs no C parser at run time.
"""

import os
import shutil
import sys
from distutils.command.build_scripts import build_scripts  # setuptools' distutils, in a pip build too
from distutils.errors import LinkError

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
LIB_EXT = "psuite._native.libpshwpc"
DECODER_EXT = "psuite._native.libpsdwarf"
SHARED_OBJECTS = {LIB_EXT: "libpshwpc.so", DECODER_EXT: "libpsdwarf.so"}
# configs/ (event lists, metric definitions) ship beside the library, where
# both the C library and the Python code find them.
CONFIGS = tuple(sorted(os.path.join("configs", f) for f in os.listdir(os.path.join(HERE, "configs"))
                       if f.endswith(".xml")))


def _version():
    scope = {}
    with open(os.path.join(HERE, "psuite", "_version.py")) as f:
        exec(f.read(), scope)
    return scope["__version__"]


class BuildNative(build_ext):
    def get_ext_filename(self, fullname):
        # distutils asks with the full dotted name and, for in-place and
        # package-relative paths, with the last component only.
        for ext_name, filename in SHARED_OBJECTS.items():
            if fullname == ext_name:
                return os.path.join("psuite", "_native", filename)
            if fullname == ext_name.rsplit(".", 1)[1]:
                return filename
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext):
        return []  # not a Python module: no PyInit_ symbol

    # pshwpc.h and _ffi.py sit beside the library; in-place (editable)
    # builds copy them back with it.
    def _extra_files(self):
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            if ext.name == LIB_EXT:
                inplace_file, regular_file = self._get_inplace_equivalent(build_py, ext)
                for name in ("pshwpc.h", "_ffi.py", LAUNCHER) + CONFIGS:
                    yield (os.path.join(os.path.dirname(regular_file), name),
                           os.path.join(os.path.dirname(inplace_file), name))

    def copy_extensions_to_source(self):
        super().copy_extensions_to_source()
        for regular, inplace in self._extra_files():
            os.makedirs(os.path.dirname(inplace), exist_ok=True)
            self.copy_file(regular, inplace, level=self.verbose)

    def _get_output_mapping(self):
        yield from super()._get_output_mapping()
        if self.inplace:
            yield from self._extra_files()

    def get_outputs(self):
        outputs = super().get_outputs()
        if not self.inplace:
            outputs += [regular for regular, _ in self._extra_files()]
        return outputs

    def build_extension(self, ext):
        super().build_extension(ext)
        if ext.name != LIB_EXT:
            return
        out_dir = os.path.dirname(self.get_ext_fullpath(ext.name))
        shutil.copyfile(os.path.join(HERE, "csrc", "pshwpc.h"), os.path.join(out_dir, "pshwpc.h"))
        os.makedirs(os.path.join(out_dir, "configs"), exist_ok=True)
        for name in CONFIGS:
            shutil.copyfile(os.path.join(HERE, name), os.path.join(out_dir, name))
        sys.path.insert(0, os.path.join(HERE, "psuite", "libperfsuite"))
        try:
            import cdefs  # noqa: PLC0415 - the declarations, without importing psuite
        finally:
            sys.path.pop(0)
        import cffi

        ffi = cffi.FFI()
        ffi.cdef(cdefs.CDEFS)
        ffi.cdef(cdefs.DECODER_CDEFS)
        ffi.set_source("psuite._native._ffi", None)
        ffi.emit_python_code(os.path.join(out_dir, "_ffi.py"))
        build_launcher(self, out_dir)


# The native psrun launcher (csrc/psrun/*.c), the psrun command: an
# executable, no Python at run time.  Built beside libpshwpc.so
# (psuite/_native/psrun finds the library next to itself) and copied to
# LAUNCHER_SCRIPT, which setuptools installs into bin/ as the script psrun:
# pip install . and pip install -e . both put it on PATH.
LAUNCHER = "psrun"
LAUNCHER_SCRIPT = os.path.join("build", "psrun-bin", "psrun")


def build_launcher(cmd, out_dir):
    import sysconfig

    sources = sorted(os.path.join("csrc", "psrun", f) for f in os.listdir(os.path.join(HERE, "csrc", "psrun"))
                     if f.endswith(".c"))
    macros = [("_GNU_SOURCE", None), ("PSUITE_VERSION", f'"{_version()}"'),
              ("PSRUN_PYVER", f'"{sysconfig.get_python_version()}"'),
              # last resort for editable installs: the source tree's library
              ("PSRUN_SOURCE_NATIVE_DIR", '"' + os.path.join(HERE, "psuite", "_native") + '"')]
    objects = cmd.compiler.compile(sources, output_dir=os.path.join(cmd.build_temp, "psrun"), macros=macros,
                                   extra_postargs=["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                                   "-Wno-format-truncation"])
    exe = os.path.join(out_dir, LAUNCHER)
    # Linked statically (position-independent) where the C library allows:
    # psrun runs once before every measured program, and a static image
    # starts without the dynamic loader (0.2 ms less CPU time per run,
    # measured against the dynamic build in the same run).  It calls
    # nothing that needs a shared C library (no NSS, no dlopen).
    try:
        cmd.compiler.link_executable(objects, LAUNCHER, output_dir=out_dir, extra_postargs=["-static-pie"])
    except LinkError:
        cmd.compiler.link_executable(objects, LAUNCHER, output_dir=out_dir)
    os.makedirs(os.path.dirname(os.path.join(HERE, LAUNCHER_SCRIPT)), exist_ok=True)
    shutil.copyfile(exe, os.path.join(HERE, LAUNCHER_SCRIPT))
    os.chmod(os.path.join(HERE, LAUNCHER_SCRIPT), 0o755)


class BuildScripts(build_scripts):
    """The launcher is an executable, copied as it is (distutils would read
    it as a script's text)."""

    def copy_scripts(self):
        self.mkpath(self.build_dir)
        outfiles = []
        for script in self.scripts:
            out = os.path.join(self.build_dir, os.path.basename(script))
            self.copy_file(script, out)
            os.chmod(out, 0o755)
            outfiles.append(out)
        return outfiles, outfiles


def _sources(folder):
    return sorted(os.path.join("csrc", folder, f) for f in os.listdir(os.path.join(HERE, "csrc", folder))
                  if f.endswith(".c"))


def _depends(folder):
    return [os.path.join("csrc", folder, f) for f in os.listdir(os.path.join(HERE, "csrc", folder))] + [
        os.path.join("csrc", "pshwpc.h")]


C_FLAGS = ["-std=gnu11", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter",
           "-Wno-format-truncation"]

# The runtime, injected into measured programs.
native = Extension(
    LIB_EXT,
    sources=_sources("runtime"),
    depends=_depends("runtime") + [os.path.join("csrc", "common", "quiet_write.h")],
    include_dirs=["csrc", os.path.join("csrc", "runtime")],
    define_macros=[("_GNU_SOURCE", None), ("PSUITE_VERSION", f'"{_version()}"')],
    extra_compile_args=C_FLAGS,
    libraries=["dl", "pthread"],
)

# The DWARF decoder, loaded by psprocess only.
decoder = Extension(
    DECODER_EXT,
    sources=_sources("decoder"),
    depends=_depends("decoder"),
    include_dirs=[os.path.join("csrc", "decoder")],
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=C_FLAGS,
)

# The four commands' manual pages (made from their --help by psuite/manpages.py), for `man psrun`.
MAN_PAGES = sorted(os.path.join("docs", "man", f) for f in os.listdir(os.path.join(HERE, "docs", "man"))
                   if f.endswith(".1"))

setup(ext_modules=[native, decoder], cmdclass={"build_ext": BuildNative, "build_scripts": BuildScripts},
      scripts=[LAUNCHER_SCRIPT], data_files=[("share/man/man1", MAN_PAGES)])
