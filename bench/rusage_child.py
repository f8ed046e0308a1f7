"""Run a command; write its wall time, peak RSS and CPU time as JSON to a file descriptor.

    python -S bench/rusage_child.py FD COMMAND ARG...     or     ... FD --shell 'PIPELINE'

A child's ru_maxrss starts from the memory of the process it was forked from: measured straight from
the benchmark (which holds the fake API server and its objects) every tool would look as big as that.
This small launcher, started without site packages, is what the tools are forked from instead.
"""

import json
import os
import sys
import time


def main() -> None:
    report_fd, command = int(sys.argv[1]), sys.argv[2:]
    shell = command[0] == "--shell"
    argv = ["/bin/sh", "-c", command[1]] if shell else command
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    with os.fdopen(report_fd, "w") as report:
        # CPU: user and system, of the command and of every process it waited for (forked workers included)
        json.dump({"wall": wall, "peak_rss_kb": usage.ru_maxrss, "cpu": usage.ru_utime + usage.ru_stime,
                   "exit_code": os.waitstatus_to_exitcode(status)}, report)


if __name__ == "__main__":
    main()
