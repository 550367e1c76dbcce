"""Builds the Cython hot path (native/*.pyx) into the waldecode package.

WALDECODE_NO_NATIVE=1 skips the extension (the pure-Python fallback is then used).
"""

import os

from setuptools import setup

ext_modules = []
if os.environ.get("WALDECODE_NO_NATIVE", "") in ("", "0"):
    from Cython.Build import cythonize
    from setuptools import Extension

    ext_modules = cythonize(
        [Extension("waldecode._native", ["native/_native.pyx"], extra_compile_args=["-O2"])],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=ext_modules)
