"""Builds the Cython hot path (native/*.pyx) into the waldecode package.

waldecode._native: WAL pages and records; waldecode._typeout: tuples, type output and
test_decoding's column lists; waldecode._logical: the reorder buffer's change storage and
the logical decoding record loop.  native/pgdefs.pxd holds the PostgreSQL constants both use,
native/wd_shortest.h the exact shortest float digits.

WALDECODE_NO_NATIVE=1 skips the extensions (the pure-Python fallback is then used).
"""

import os

from setuptools import setup

ext_modules = []
if os.environ.get("WALDECODE_NO_NATIVE", "") in ("", "0"):
    from Cython.Build import cythonize
    from setuptools import Extension

    ext_modules = cythonize(
        [
            Extension("waldecode._native", ["native/_native.pyx"], extra_compile_args=["-O2"]),
            Extension("waldecode._typeout", ["native/_typeout.pyx"], include_dirs=["native"],
                      extra_compile_args=["-O2"], depends=["native/pgdefs.pxd", "native/_typeout.pxd",
                                                           "native/wd_shortest.h"]),
            Extension("waldecode._logical", ["native/_logical.pyx"], include_dirs=["native"],
                      extra_compile_args=["-O2"], depends=["native/pgdefs.pxd"]),
        ],
        include_path=["native"],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=ext_modules)
