"""What one decoding run is asked for, in one object.

A ``DecodeRequest`` is made once — by the command line from its options (``cli.decode``, ``cli.spark``,
``cli.forensics``), by the ``pgwal`` source from its options, by a library caller — checked when made, and
passed whole: ``session.decode_wal`` decodes it, Spark's range path gives each range the same request with
the range's own bounds (``for_range``), ``diverge`` decodes both timelines from the switch point with it.
Where the run reads from, the plugin it writes through and who hears its warnings are not part of it:
they are the caller's (the input, the plugin instance, a printer or a collector).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import UsageError
from ..pg.settings import DEFAULT_MEMORY_BUDGET, DEFAULT_SPILL_THRESHOLD

#: the largest LSN (src/include/access/xlogdefs.h: XLogRecPtr is a uint64)
MAX_LSN = (1 << 64) - 1

#: waldecode's own ``-o`` options, which the decoder reads and the output plugin never sees (docs/replica.md):
#: name -> its values, the default first.  ``old-rows=full``: an UPDATE's or DELETE's whole old row, whatever
#: the table's replica identity; ``toast=fill``: an UPDATE's unchanged TOAST values in the new row, read from
#: the redone TOAST pages, where test_decoding prints ``unchanged-toast-datum``
DECODER_OPTIONS = {"old-rows": ("identity", "full"), "toast": ("unchanged", "fill")}


def split_options(options: dict) -> tuple[dict, dict]:
    """``-o`` options as (the output plugin's, waldecode's own ``DECODER_OPTIONS`` with every one set, the
    default where not given); a value not declared for one of waldecode's is a ``UsageError``."""
    plugin, own = {}, {}
    for name, value in (options or {}).items():
        if name not in DECODER_OPTIONS:
            plugin[name] = value
        elif value not in DECODER_OPTIONS[name]:
            raise UsageError(f"-o {name} takes {' or '.join(DECODER_OPTIONS[name])}, not "
                             f"{'nothing' if value is None else repr(value)}")
        else:
            own[name] = value
    return plugin, {name: own.get(name, values[0]) for name, values in DECODER_OPTIONS.items()}


@dataclass(frozen=True)
class DecodeRequest:
    """One run's parameters, as ``pg_recvlogical`` and a slot take them.

    ``start_lsn`` is the slot's confirmed position: every transaction committing at or after it is
    decoded whole; ``restart_lsn``, when known, is where reading begins (the slot's restart point);
    ``end_lsn`` where reading ends (``--endpos``).  ``timeline``: the one to read when the input holds
    several.  ``plugin_options``: the plugin's options as ``pg_recvlogical -o`` gives them; waldecode's own
    among them (``DECODER_OPTIONS``) are taken out into ``decoder_options``.
    ``two_phase``: PREPARE decoded as a slot created with ``two_phase`` decodes it.
    ``include_uncommitted``: the transactions still open at the end are handed to the plugin too.
    ``spill_dir``, ``spill_threshold``, ``memory_budget``: the reorder buffer's spilling (reorderbuffer.c's
    ``logical_decoding_work_mem`` by changes and by bytes)."""

    plugin_options: dict = field(default_factory=dict)
    start_lsn: int | None = None
    restart_lsn: int | None = None
    end_lsn: int | None = None
    timeline: int | None = None
    two_phase: bool = False
    include_uncommitted: bool = False
    spill_dir: str | None = None
    spill_threshold: int = DEFAULT_SPILL_THRESHOLD
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    decoder_options: dict = field(default_factory=dict)

    def __post_init__(self):
        # a copy: the caller's dict may change after the request is made, and the request is shared
        # (a request made again by dataclasses.replace has its own options in decoder_options already)
        plugin, own = split_options({**(self.decoder_options or {}), **(self.plugin_options or {})})
        object.__setattr__(self, "plugin_options", plugin)
        object.__setattr__(self, "decoder_options", own)
        for name in ("start_lsn", "restart_lsn", "end_lsn"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_LSN:
                raise UsageError(f"{name.replace('_', ' ')} {value} is not an LSN")
        if self.timeline is not None and not 1 <= self.timeline <= 0xFFFFFFFF:
            # src/include/access/xlogdefs.h: TimeLineID is a uint32, and timeline 0 does not exist
            raise UsageError(f"timeline {self.timeline} does not exist: timelines are numbered from 1")
        if self.spill_threshold < 1:
            raise UsageError(f"the spill threshold must be at least 1 change, not {self.spill_threshold}")
        if self.memory_budget < 0:
            raise UsageError(f"the memory budget cannot be negative ({self.memory_budget})")

    @property
    def old_rows_full(self) -> bool:
        return self.decoder_options["old-rows"] == "full"

    @property
    def toast_fill(self) -> bool:
        return self.decoder_options["toast"] == "fill"

    def refuse_decoder_options(self, where: str) -> None:
        """``where`` (a command that drives the decoder itself) does not take waldecode's own options."""
        given = [f"{k}={v}" for k, v in self.decoder_options.items() if v != DECODER_OPTIONS[k][0]]
        if given:
            raise UsageError(f"{where} does not take -o {', -o '.join(given)} (waldecode decode does)")

    @classmethod
    def given(cls, request: DecodeRequest | None, fields: dict) -> DecodeRequest:
        """What a caller taking a request or its fields as keywords was given: ``request`` with ``fields``
        (keyword arguments) in place of its own, or a request of those fields alone."""
        if request is None:
            return cls(**fields)
        return replace(request, **fields) if fields else request

    def for_range(self, start_lsn: int | None, restart_lsn: int | None, end_lsn: int | None,
                  last: bool, spill_dir: str | None) -> DecodeRequest:
        """The request of one output range of Spark's range path: a slot restarted at ``restart_lsn``,
        confirmed up to ``start_lsn``, reading to ``end_lsn``; what is open at the end is the run's
        only in the ``last`` range."""
        return replace(self, start_lsn=start_lsn, restart_lsn=restart_lsn, end_lsn=end_lsn,
                       include_uncommitted=self.include_uncommitted and last, spill_dir=spill_dir)
