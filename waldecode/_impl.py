"""Chooses the implementation of the hot path: Cython (``waldecode._native``) or pure Python.

``WALDECODE_IMPL=python`` or ``=cython`` forces one (and fails loudly if Cython
cannot be loaded); ``WALDECODE_PURE=1`` is a shorthand for ``python``.  Otherwise
Cython is used when it was built, and pure Python when not.  ``IMPL`` names the
active one.  Both expose the same functions and raise the same exceptions.
"""

from __future__ import annotations

import os

_forced = os.environ.get("WALDECODE_IMPL", "").strip().lower()
if os.environ.get("WALDECODE_PURE", "").strip() not in ("", "0"):
    _forced = "python"
if _forced not in ("", "python", "cython"):
    raise ImportError(f"WALDECODE_IMPL must be 'python' or 'cython', not {_forced!r}")

if _forced == "python":
    from . import _pyframe as impl
else:
    try:
        from . import _native as impl  # type: ignore[attr-defined,no-redef]
    except ImportError:
        if _forced == "cython":
            raise ImportError("WALDECODE_IMPL=cython but the extension waldecode._native is not built; "
                              "install the package (pip install .) to build it") from None
        from . import _pyframe as impl

IMPL = "cython" if impl.__name__.endswith("_native") else "python"
frame_segment = impl.frame_segment
decode_record = impl.decode_record
pglz_decompress = impl.pglz_decompress
