"""Builds the Cython hot path (native/*.pyx) into the waldecode package.

waldecode._native: WAL pages and records; waldecode._typeout: tuples, type output and
test_decoding's column lists; waldecode._waldump: ``inspect`` (pg_waldump's lines and --stats) in
one loop over the segment bytes; waldecode._logical: the reorder buffer's change storage and the
logical decoding record loop.  native/pgconsts.pxd, generated here by native/pgconsts.py,
declares the PostgreSQL constants of the pure-Python modules for Cython (native/pgconsts.h, a
few of them for C); native/wd_xlogrecord.h is the one DecodeXLogRecord, native/wd_xlogframe.h the one
page walker; native/waldecode/_typeout.pxd _typeout's C entry points for _logical; native/pgdefs.pxd
the rest of what the native code needs of PostgreSQL's headers, native/wd_shortest.h the
exact shortest float digits, native/wd_*.h the C of the WAL reader and pg_waldump's text.

WALDECODE_NO_NATIVE=1 skips the extensions (the pure-Python fallback is then used).
"""

import os

from setuptools import setup

ext_modules = []
if os.environ.get("WALDECODE_NO_NATIVE", "") in ("", "0"):
    import runpy

    from Cython.Build import cythonize
    from setuptools import Extension

    here = os.path.dirname(os.path.abspath(__file__))
    pgconsts = runpy.run_path(os.path.join(here, "native", "pgconsts.py"))
    pgconsts["write"](here, os.path.join(here, "native", "pgconsts.pxd"))
    pgconsts["write"](here, os.path.join(here, "native", "pgconsts.h"), pgconsts["render_c"])
    # DecodeXLogRecord, included by every extension that reads records
    xlogrecord = ["native/wd_xlogrecord.h", "native/wd_xlogrecord.pxd", "native/pgconsts.h"]
    # the page walker, included by the two framers (_native's frame_segment, _waldump's Dump)
    xlogframe = ["native/wd_xlogframe.h", "native/wd_xlogframe.pxd", "native/wd_crc32c.h", "native/wd_xlogpage.h"]

    # the sections a module includes (Cython include files, one namespace with the module)
    typeout_sections = sorted(os.path.join("native", "typeout", f)
                              for f in os.listdir(os.path.join(here, "native", "typeout")))
    logical_sections = sorted(os.path.join("native", "logical", f)
                              for f in os.listdir(os.path.join(here, "native", "logical")))

    ext_modules = cythonize(
        [
            Extension("waldecode._native", ["native/_native.pyx"], include_dirs=["native"],
                      extra_compile_args=["-O2"],
                      depends=xlogframe + xlogrecord),
            Extension("waldecode._waldump", ["native/_waldump.pyx"], include_dirs=["native"],
                      extra_compile_args=["-O2"],
                      depends=["native/pgconsts.pxd", "native/wd_waldump.h"] + xlogframe + xlogrecord),
            Extension("waldecode._typeout", ["native/_typeout.pyx"], include_dirs=["native"],
                      extra_compile_args=["-O2"], depends=["native/pgdefs.pxd", "native/pgconsts.pxd",
                                                           "native/wd_shortest.h",
                                                           "native/waldecode/_typeout.pxd"] + typeout_sections),
            Extension("waldecode._logical", ["native/_logical.pyx"], include_dirs=["native"],
                      extra_compile_args=["-O2"],
                      depends=["native/pgdefs.pxd", "native/waldecode/_typeout.pxd"] + xlogrecord + logical_sections),
        ],
        include_path=["native"],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=ext_modules)
