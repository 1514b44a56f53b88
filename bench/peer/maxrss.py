#!/usr/bin/python3
"""Runs a command and records its peak RSS, for zerotrain's side of bench/compare.

    zerotrain run --num_gpus 2 -- /usr/bin/python3 bench/peer/maxrss.py OUT_DIR -- zerotrain train ...

Writes OUT_DIR/rss.rank<RANK>.json = {"rank": R, "peak_rss_mib": M, "status": S}
(RANK from the environment `zerotrain run` sets, 0 without it), where M is
the child's ru_maxrss: the same high-water mark of resident memory the
PyTorch peer reports for each of its ranks (VmHWM). The wrapper itself is not
counted. Exits with the command's status (128 + signal if it was killed).
"""

import json
import os
import resource
import signal
import subprocess
import sys


def main(argv):
    if len(argv) < 3 or argv[1] != "--":
        print("usage: maxrss.py OUT_DIR -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    out_dir, command = argv[0], argv[2:]
    rank = int(os.environ.get("RANK", "0"))
    child = subprocess.Popen(command)
    # zerotrain run stops a job with SIGTERM (Ctrl-C: SIGINT): pass it on, so
    # the trainer does not outlive its wrapper.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    status = child.wait()
    if status < 0:
        status = 128 - status
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"rss.rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "peak_rss_mib": peak_kib / 1024.0, "status": status}, f)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
