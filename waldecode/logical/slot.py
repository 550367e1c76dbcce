"""An offline replication slot: ``decode --slot FILE --output OUT`` resumes where it stopped.

Owns what a logical slot keeps on the server (ReplicationSlotPersistentData and the
snapshot files under pg_logical/snapshots): where reading must restart, what has been
confirmed, the catalog as of the restart point, and — offline only — how many bytes of
OUT are confirmed.  The rules that make a SIGKILL at any moment harmless:

* OUT is flushed and fsynced before the slot file records its length, and a run that
  resumes first cuts OUT back to that length: output past the last slot update is
  written again, never twice, and never lost.
* Confirmed is the end of the last record decoded: every commit before it is in OUT.
  The restart point is at or before the first record of every transaction still open
  there (prepared ones included), so each of them is read whole again; commits before
  the confirmed position are skipped on the way, as the server skips them.
* The catalog is the one in force at the restart point: captured only where no
  transaction has catalog changes in progress, so reading from there sees all of them.
* The slot file is replaced atomically (write, fsync, rename, fsync of the directory);
  one from another cluster, timeline, plugin configuration or format version is
  refused.

Takes the decoder's position from ``session.decode_wal``'s record hook; hands
``(catalog, confirmed, restart)`` back to it when resuming.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from ..catalog import Catalog
from ..rmgr import RM_STANDBY_ID
from ..rmgr.standby import XLOG_RUNNING_XACTS
from .replica import checkpoint_redo
from .snapbuild import SNAPBUILD_CONSISTENT
from ..errors import WALError, format_lsn
from ..faults import crashpoint
from ..wal.xlogreader import parse_lsn

FORMAT_NAME = "waldecode-slot"
FORMAT_VERSION = 1


class SlotError(WALError):
    """A slot file that cannot be used with this input, output or configuration."""


@dataclass
class SlotState:
    system_identifier: int
    timeline: int
    major: int
    plugin: str
    options: dict
    two_phase: bool
    restart_lsn: int
    confirmed_lsn: int
    output_bytes: int
    catalog: Catalog
    _catalog_text: tuple | None = None

    def to_json(self) -> str:
        doc = {
            "format": FORMAT_NAME, "version": FORMAT_VERSION,
            "system_identifier": str(self.system_identifier), "timeline": self.timeline, "major": self.major,
            "plugin": self.plugin, "options": self.options, "two_phase": self.two_phase,
            "restart_lsn": format_lsn(self.restart_lsn), "confirmed_flush_lsn": format_lsn(self.confirmed_lsn),
            "output_bytes": self.output_bytes,
        }
        # The catalog is serialized once per catalog, not at every update of the slot
        if self._catalog_text is None or self._catalog_text[0] is not self.catalog:
            self._catalog_text = (self.catalog, self.catalog.to_json())
        head = json.dumps(doc, separators=(",", ":"))
        return head[:-1] + ',"catalog":' + self._catalog_text[1] + "}"

    @classmethod
    def load(cls, path: str) -> SlotState:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            raise SlotError(f"cannot read slot file {path}: {e.strerror}", path=path) from None
        except json.JSONDecodeError as e:
            raise SlotError(f"slot file {path} is not a JSON document: {e}", path=path) from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
            raise SlotError(f"{path} is not a waldecode slot file", path=path)
        if doc.get("version") != FORMAT_VERSION:
            raise SlotError(f"slot file {path} has format version {doc.get('version')!r}; this waldecode "
                            f"reads version {FORMAT_VERSION}", path=path)
        try:
            return cls(int(doc["system_identifier"]), int(doc["timeline"]), int(doc["major"]), doc["plugin"],
                       dict(doc["options"]), bool(doc["two_phase"]), parse_lsn(doc["restart_lsn"]),
                       parse_lsn(doc["confirmed_flush_lsn"]), int(doc["output_bytes"]),
                       Catalog.from_json(json.dumps(doc["catalog"]), f"{path} (catalog)"))
        except (KeyError, TypeError, ValueError) as e:
            raise SlotError(f"slot file {path} is damaged: {e}", path=path) from None

    def check_matches(self, path: str, system_identifier: int, timeline: int, plugin: str, options: dict,
                      two_phase: bool) -> None:
        """Refuse a slot of another cluster, timeline or plugin configuration, as the server would."""
        if self.system_identifier != system_identifier:
            raise SlotError(f"slot file {path} belongs to the cluster with system identifier "
                            f"{self.system_identifier}, but the WAL is from {system_identifier}", path=path)
        if self.timeline != timeline:
            raise SlotError(f"slot file {path} follows timeline {self.timeline}, but the WAL read is on timeline "
                            f"{timeline} (use --timeline {self.timeline}, or a new slot file)", path=path)
        if (self.plugin, self.options, self.two_phase) != (plugin, options, two_phase):
            raise SlotError(f"slot file {path} was created for {self.plugin} with options {self.options}"
                            f"{' and two-phase' if self.two_phase else ''}; this run asks for {plugin} with "
                            f"{options}{' and two-phase' if two_phase else ''}: OUT would mix them", path=path)


def write_atomically(path: str, text: str) -> None:
    """Write, fsync, rename over ``path``, fsync the directory: the file is old or new, never torn."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SlotKeeper:
    """Follows a decoding run and updates the slot file at record boundaries.

    ``candidates`` are restart points: (LSN, catalog in force there), captured where no
    transaction has catalog changes in progress; the slot's restart point is the latest
    one at or before the first record of every open transaction.
    """

    def __init__(self, path: str, state: SlotState, output, interval: float = 5.0, new: bool = False):
        self.path = path
        self.state = state
        self.output = output  # has flush_and_sync() -> int (bytes confirmed in OUT)
        self.interval = interval
        self._last_write = time.monotonic()
        self.candidates: list[tuple[int, Catalog]] = [(state.restart_lsn, state.catalog)]
        self.new = new
        self._catalog_version = -1  # commits with catalog changes when self._catalog was materialized
        self._catalog = None

    def confirmed_output(self) -> int | None:
        """How many bytes of OUT the slot file confirms; None when this run created the slot and has not
        written its file yet (then OUT holds nothing a slot confirms)."""
        if self.new and not os.path.exists(self.path):
            return None
        return self.state.output_bytes

    def begin(self, read_from: int, decoder) -> None:
        if self.new:
            # A new slot restarts where this first run began, with the catalog it was given
            self.state.restart_lsn = read_from
            self.candidates = [(read_from, self.state.catalog)]

    # -- hooks called by session.decode_wal -------------------------------------------------------

    def after_record(self, rec, decoder) -> None:
        if decoder.snapbuild.state != SNAPBUILD_CONSISTENT:
            return
        if decoder.replica is not None:
            # Below wal_level logical a run resumed here starts with no page known: only a checkpoint's redo
            # point, from which every page's first change carries an image, is a restart point
            redo = checkpoint_redo(rec)
            if redo is not None and redo > self.candidates[-1][0]:
                self.capture(redo, decoder.history)
        elif rec.xl_rmid == RM_STANDBY_ID and rec.xl_info & 0xF0 == XLOG_RUNNING_XACTS:
            # Where the server serializes its snapshots: a restart point, if the catalog allows
            self.capture(rec.end_lsn, decoder.history)
        if time.monotonic() - self._last_write >= self.interval:
            self.position(rec.end_lsn, decoder.rb.oldest_first_lsn())

    def finish(self, end_lsn: int | None, decoder) -> None:
        if decoder.snapbuild.state == SNAPBUILD_CONSISTENT and end_lsn is not None:
            self.position(end_lsn, decoder.rb.oldest_first_lsn(), final=True)

    def capture(self, lsn: int, history) -> None:
        """A possible restart point at ``lsn`` (a record boundary), with the catalog in force there."""
        if history is None or not history.has_changes:
            catalog = self.candidates[-1][1]  # the snapshot alone still describes the catalog here
        elif history.has_uncommitted_changes:
            return  # a transaction's catalog changes would be neither in the catalog nor seen again
        else:
            version = len(history.commit_lsns)  # no commit with catalog changes since: the same catalog
            if version != self._catalog_version:
                catalog = history.materialize()
                if catalog is None:
                    return
                self._catalog_version, self._catalog = version, catalog
            catalog = self._catalog
        self.candidates.append((lsn, catalog))

    def position(self, confirmed: int, oldest_open: int | None, final: bool = False) -> None:
        """Everything before ``confirmed`` is decided and written; open transactions begin at
        ``oldest_open`` or later.  Updates the slot file now and then, and always when ``final``."""
        now = time.monotonic()
        if not final and now - self._last_write < self.interval:
            return
        need = confirmed if oldest_open is None else min(oldest_open, confirmed)
        best = None
        for i, (lsn, _cat) in enumerate(self.candidates):
            if lsn <= need:
                best = i
        if best is None:
            return  # no restart point early enough yet: keep the slot as it is
        del self.candidates[:best]
        restart, catalog = self.candidates[0]
        self.state.output_bytes = self.output.flush_and_sync()
        crashpoint("after-output")
        self.state.restart_lsn = restart
        self.state.confirmed_lsn = max(confirmed, self.state.confirmed_lsn)
        self.state.catalog = catalog
        write_atomically(self.path, self.state.to_json())
        crashpoint("after-slot")
        self._last_write = now
