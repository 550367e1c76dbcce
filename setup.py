"""Builds the Cython hot path (native/*.pyx) into the waldecode package.

waldecode._native: WAL pages and records; waldecode._typeout: tuples, type output and
test_decoding's column lists.  native/pgconsts.pxd, generated here by native/pgconsts.py,
declares the PostgreSQL constants of the pure-Python modules for Cython; native/pgdefs.pxd
the rest of what the native code needs of PostgreSQL's headers, native/wd_shortest.h the
exact shortest float digits.

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
    runpy.run_path(os.path.join(here, "native", "pgconsts.py"))["write"](here, os.path.join(here, "native",
                                                                                         "pgconsts.pxd"))

    ext_modules = cythonize(
        [
            Extension("waldecode._native", ["native/_native.pyx"], extra_compile_args=["-O2"]),
            Extension("waldecode._typeout", ["native/_typeout.pyx"], include_dirs=["native"],
                      extra_compile_args=["-O2"], depends=["native/pgdefs.pxd", "native/pgconsts.pxd", "native/_typeout.pxd",
                                                           "native/wd_shortest.h"]),
        ],
        include_path=["native"],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=ext_modules)
