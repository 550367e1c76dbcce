"""What a run has to say besides its output: where reading stopped, the warnings and notes by cause,
the changes ``--format sql`` could not write, and the exit status they make (the README's contract).
"""

from __future__ import annotations

import sys

from ..errors import UsageError, format_lsn
from ..wal.xlogreader import XLogReader

EXIT_OK = 0
EXIT_CORRUPT = 1  # bad input, or what it holds cannot be decoded
EXIT_USAGE = 2  # arguments, catalog snapshot or plugin options that do not fit


def _report_stop(reader: XLogReader, prog: str = "waldecode", quiet: bool = False) -> int:
    """Say why reading stopped; non-zero when WAL was damaged rather than ended."""
    return _report_stop_of(reader.stop, reader.end_lsn, prog, quiet)


def _report_stop_of(stop, end_lsn: int | None, prog: str = "waldecode", quiet: bool = False) -> int:
    """The status of a stop, said on stderr: an error line (1), or the normal end of WAL (0), a line
    ``quiet`` leaves out."""
    if stop is None or stop.kind == "limit":
        return EXIT_OK
    where = f" in {stop.path}" if stop.path else ""
    if end_lsn is not None and stop.lsn < end_lsn:
        print(f"{prog}: error: WAL ended at {format_lsn(stop.lsn)}{where} before the requested end "
              f"{format_lsn(end_lsn)}: {stop.reason}", file=sys.stderr)
        return EXIT_CORRUPT
    if stop.kind == "invalid":
        print(f"{prog}: error: invalid WAL record at {format_lsn(stop.lsn)}{where}: {stop.reason}; "
              "reading stopped there", file=sys.stderr)
        return EXIT_CORRUPT
    if not quiet:
        print(f"{prog}: end of WAL at {format_lsn(stop.lsn)}{where}: {stop.reason}", file=sys.stderr)
    return EXIT_OK


def report_problems(problems: list, undo: bool) -> int:
    """``--format sql`` (decode, diverge): what could not be redone or undone (each a comment at its
    place in the output) makes the output incomplete: each listed, then one error line, status 1."""
    if not problems:
        return EXIT_OK
    for problem in problems:
        print(f"waldecode: {problem}", file=sys.stderr)
    print(f"waldecode: error: {len(problems)} change(s) listed above could not be {'undone' if undo else 'redone'}: "
          "the output leaves them out (a comment stands at each one's place)", file=sys.stderr)
    return EXIT_CORRUPT


def _say(line: str) -> None:
    print(f"waldecode: {line}", file=sys.stderr)


def _print_notes(notes) -> None:
    for note in notes:
        print(f"waldecode: note: {note}", file=sys.stderr)


def warning_printer(args):
    """``on_warning`` for a decoding run: the first occurrence of each cause (every one with ``-v``),
    as ``warning:`` when the output lacks what it names, else ``note:`` (left out under ``-q``)."""
    from ..logical.diagnostics import Diagnostic  # lazy: 5 ms, decoding only (not inspect or --help)

    verbose, quiet = getattr(args, "verbose", False), getattr(args, "quiet", False)
    seen = set()

    def warn(message) -> None:
        d = Diagnostic.of(message)
        if not verbose and d.cause in seen:
            return
        seen.add(d.cause)
        if d.lacks:
            print(f"waldecode: warning: {d}", file=sys.stderr)
        elif not quiet:
            print(f"waldecode: note: {d}", file=sys.stderr)

    return warn


def report_diagnostics(result, quiet: bool = False, report: str | None = None, complete: bool = True) -> bool:
    """The summary of a decoding run's warnings and notes on stderr, the one line that says what to do
    first, then one line per cause (capped); ``report``: all of them as JSON.  True when the output
    lacks something because of them (exit status 1).  ``complete``: nothing else is missing from the output."""
    from ..logical.diagnostics import Diagnostics  # lazy: 5 ms, decoding only (not inspect or --help)

    decoder = result.decoder
    diags = decoder.diagnostics if decoder is not None else None
    if diags is None or diags.total != len(result.warnings):
        # warnings that came back from elsewhere too (Spark's tasks): the changes were decoded out of
        # the decoder's sight, so no note could be checked against them: each counts as a failure
        diags = Diagnostics()
        for w in result.warnings:
            d = diags.add(w)[0]
            if not d.lacks:
                diags.escalate(d, "not checked against the changes decoded (Spark's tasks decoded them)")
    if report:
        try:
            with open(report, "w", encoding="utf-8") as f:
                f.write(diags.to_json())
        except OSError as e:
            raise UsageError(f"cannot write the report {report}: {e.strerror}") from None
    if not diags.total:
        return False
    lacking = diags.lacking
    more = "; -v prints every occurrence" + ("" if report else ", --report FILE writes them all as JSON")
    if lacking:
        count = sum(c.count for c in lacking)
        unmapped = [c for c in lacking if c.key.startswith(("could not map filenumber", "could not open relation"))]
        advice = ("decode with a catalog snapshot that knows these relations: one taken at or before the reading "
                  "start and after they were created or rewritten ('waldecode catalog --datadir' of a base backup "
                  "taken then, or --catalog DIR holding several)" if unmapped else
                  "the causes below name what could not be decoded")
        print(f"waldecode: error: the output lacks what {count} warning(s) of {len(lacking)} cause(s) name: "
              f"{advice}{more}", file=sys.stderr)
    elif not quiet:
        count = sum(c.count for c in diags.notes)
        print(f"waldecode: note: {count} note(s) of {len(diags.notes)} cause(s); no change decoded after them "
              f"depends on them" + (": the output is complete" if complete else "") + more, file=sys.stderr)
    if lacking or not quiet:
        for line in diags.summary():
            print(f"waldecode:   {line}", file=sys.stderr)
    return bool(lacking)


def report_decode_result(result, segments, start_lsn, quiet: bool = False, report: str | None = None) -> int:
    """Say on stderr what a decoding run left out or could not do (``decode`` and ``spark decode``);
    the exit status.  ``quiet`` leaves out the line of a normal end of WAL and the notes; ``report``:
    write the warnings and notes there as JSON (``report_diagnostics``)."""
    from ..logical.session import missing_start_message  # lazy: the decoder, 0.2 s that inspect never needs

    if result.consistent_lsn is None:
        # Without a consistent point nothing was decoded: say what became of each transaction seen
        open_xids = {t.xid for t in result.open_transactions}
        for nd in result.ended_early:
            if nd not in result.not_decoded and nd.xid not in open_xids:
                print(f"waldecode: {nd.describe()}", file=sys.stderr)
    for t in result.open_transactions:
        print(f"waldecode: transaction {t.xid} is still open at the end of the WAL read "
              f"(first LSN {format_lsn(t.first_lsn)}, {t.nchanges} changes"
              + (f", prepared as {t.gid!r}" if t.prepared else "") + ")", file=sys.stderr)
    status = _report_stop_of(result.stop, result.end_lsn, quiet=quiet)
    if result.not_decoded:
        for nd in result.not_decoded[:_MAX_LISTED]:
            print(f"waldecode: error: {nd.describe()}", file=sys.stderr)
        if len(result.not_decoded) > _MAX_LISTED:
            print(f"waldecode: error: ... and {len(result.not_decoded) - _MAX_LISTED} more", file=sys.stderr)
        why = (missing_start_message(result.plan, segments.name(segments.first_segno))
               if result.plan is not None and not result.plan.reaches else "")
        print(f"waldecode: error: {len(result.not_decoded)} transaction(s) committed at or after "
              f"{format_lsn(start_lsn)} are missing from the output" + (f": {why}" if why else ""),
              file=sys.stderr)
        report_diagnostics(result, quiet, report, complete=False)
        return EXIT_CORRUPT
    if report_diagnostics(result, quiet, report):
        # The output is complete but for what the warnings name: never let that pass as success
        return EXIT_CORRUPT
    return status


_MAX_LISTED = 50
