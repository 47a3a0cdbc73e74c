"""Runs a command with its stderr on a pseudo-terminal, as a person would
see it, and prints what appeared there: every carriage return as a line
break, so that each redrawn progress line is a line of its own. Its stdout
goes nowhere; the exit status is the command's.

    on_terminal.py COMMAND [ARGUMENT...]
"""

import os
import pty
import subprocess
import sys


def main():
    terminal, command_side = pty.openpty()
    process = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL,
                               stderr=command_side)
    os.close(command_side)
    seen = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the command's side is closed: it has ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(terminal)
    text = seen.decode("utf-8", "replace")
    # The terminal turns each "\n" into "\r\n".
    sys.stdout.write(text.replace("\r\n", "\n").replace("\r", "\n"))
    sys.exit(process.wait())


if __name__ == "__main__":
    main()
