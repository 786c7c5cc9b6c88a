"""Build outputs: libpshwpc.so, pshwpc.h and the cffi binding _ffi.py."""
