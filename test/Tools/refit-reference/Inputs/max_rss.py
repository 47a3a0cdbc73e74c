"""max_rss.py MIB COMMAND...: runs COMMAND and fails if it, or a process it
waited for, ever held more than MIB MiB of memory."""

import resource
import subprocess
import sys

limit, command = int(sys.argv[1]), sys.argv[2:]
status = subprocess.run(command).returncode
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
if status:
    sys.exit(status)
if peak > limit:
    sys.exit(f"error: {peak} MiB at the peak, more than {limit} MiB")
print(f"within {limit} MiB")
