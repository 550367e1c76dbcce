"""Run one command and write its wall time and peak RSS to a file (a script, run by ``measure``).

Why a separate, small process: Linux carries a process's peak RSS across exec, so a
command forked (or vforked) straight from the benchmark reports at least the
benchmark's own peak as its ``ru_maxrss`` (``/bin/true`` spawned from a 300 MB Python
reports 300 MB).  This interpreter, started with ``-I -S`` and importing nothing,
forks the command and times it with ``os.wait4``; a child of it still starts from its
~5 MB, so when GNU time is installed the command is run under ``/usr/bin/time``,
whose own few hundred KB are the floor, and the peak is GNU time's ``%M`` (the
command's ``ru_maxrss``).  ``measure.rss_floor()`` measures the floor.

Usage: ``python -I -S rusage.py RESULT CMD [ARG...]``; RESULT receives one line,
``wall_seconds maxrss_kb exit_status cpu_seconds rss_method``.
"""

import os
import sys
import time

GNU_TIME = "/usr/bin/time"


def main() -> None:
    result, argv = sys.argv[1], sys.argv[2:]
    rss_file = result + ".rss"
    method = "wait4"
    if os.access(GNU_TIME, os.X_OK):
        # -q: no "Command exited with non-zero status" line on the command's stderr
        argv = [GNU_TIME, "-q", "-f", "%M", "-o", rss_file, *argv]
        method = "GNU time"
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os.write(2, f"rusage: cannot run {argv[0]}\n".encode())
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t
    maxrss = ru.ru_maxrss
    if method != "wait4":
        with open(rss_file) as f:
            maxrss = int(f.read().split()[-1])
    with open(result, "w") as f:
        f.write(f"{wall!r} {maxrss} {os.waitstatus_to_exitcode(status)} {ru.ru_utime + ru.ru_stime!r} "
                f"{method.replace(' ', '_')}\n")


if __name__ == "__main__":  # run as a script by measure.py; importing it does nothing
    main()
