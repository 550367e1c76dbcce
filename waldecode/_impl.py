"""Chooses the implementation of the hot path: Cython (``waldecode._native``) or pure Python.

``WALDECODE_IMPL=python`` or ``=cython`` forces one (and fails loudly if Cython
cannot be loaded); ``WALDECODE_PURE=1`` is a shorthand for ``python``.  Otherwise
Cython is used when it was built, and pure Python when not.  ``IMPL`` names the
active one.  Both expose the same functions and raise the same exceptions.

``typeout()`` is the native tuple and type output (``waldecode._typeout``) when the
Cython implementation is active, else None: the caller then uses the pure-Python
reference (``heaptuple``, ``types``, ``output.test_decoding``).  It is imported only
when asked for; so is ``waldump()``, the native ``inspect`` loop (``waldecode._waldump``).
"""

from __future__ import annotations

import importlib
import os

_forced = os.environ.get("WALDECODE_IMPL", "").strip().lower()
if os.environ.get("WALDECODE_PURE", "").strip() not in ("", "0"):
    _forced = "python"
if _forced not in ("", "python", "cython"):
    raise ImportError(f"WALDECODE_IMPL must be 'python' or 'cython', not {_forced!r}")

if _forced == "python":
    from .wal import _pyframe as impl
else:
    try:
        from . import _native as impl  # type: ignore[attr-defined,no-redef]
    except ImportError:
        if _forced == "cython":
            raise ImportError("WALDECODE_IMPL=cython but the extension waldecode._native is not built; "
                              "install the package (pip install .) to build it") from None
        from .wal import _pyframe as impl

IMPL = "cython" if impl.__name__.endswith("_native") else "python"
frame_segment = impl.frame_segment
decode_record = impl.decode_record
pglz_decompress = impl.pglz_decompress


def use(name: str) -> None:
    """Switch the active implementation ('python' or 'cython') for this process: tests and benchmarks."""
    global impl, IMPL, frame_segment, decode_record, pglz_decompress
    if name == "python":
        from .wal import _pyframe as chosen  # lazy: loaded only when asked for, as at import above
    elif name == "cython":
        from . import _native as chosen  # type: ignore[attr-defined]  # lazy: may not be built
    else:
        raise ValueError(f"unknown implementation {name!r}")
    impl = chosen
    IMPL = name
    frame_segment = chosen.frame_segment
    decode_record = chosen.decode_record
    pglz_decompress = chosen.pglz_decompress


def _companion(name: str):
    """The extension ``waldecode.<name>`` under the Cython implementation, None under pure Python
    (or when it is not built, unless Cython was forced: then that fails loudly)."""
    if IMPL != "cython":
        return None

    try:
        return importlib.import_module(f"waldecode.{name}")
    except ImportError:
        if _forced == "cython":
            raise ImportError(f"WALDECODE_IMPL=cython but the extension waldecode.{name} is not built; "
                              "install the package (pip install .) to build it") from None
        return None


def typeout():
    """``waldecode._typeout`` under the Cython implementation, None under pure Python."""
    return _companion("_typeout")


def waldump():
    """``waldecode._waldump`` (the native ``inspect`` loop) under the Cython implementation, else None."""
    return _companion("_waldump")


_logical = None  # waldecode._logical once imported (logical() is asked per transaction)


def logical():
    """``waldecode._logical`` (the reorder buffer's change storage, the record loop) under the Cython
    implementation, None under pure Python."""
    global _logical
    if IMPL != "cython":
        return None
    if _logical is None:
        try:
            from . import _logical as mod  # lazy: 40 ms that only decode needs; may not be built
        except ImportError:
            if _forced == "cython":
                raise ImportError("WALDECODE_IMPL=cython but the extension waldecode._logical is not built; "
                                  "install the package (pip install .) to build it") from None
            return None
        _logical = mod
    return _logical


def available() -> list[str]:
    """The implementations that can be loaded here."""
    names = ["python"]
    try:
        from . import _native  # noqa: F401  # lazy: a probe, the extension may not be built
    except ImportError:
        return names
    return names + ["cython"]
