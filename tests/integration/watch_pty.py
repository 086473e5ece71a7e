#!/usr/bin/env python3
"""watch_pty.py: runs a command under a pseudo-terminal until it has drawn FRAMES frames, then
sends it SIGNAL, and writes what it drew to OUTPUT and its exit status (the shell's way: 128+n
when killed by signal n) to stdout.

usage: watch_pty.py FRAMES SIGNAL OUTPUT [--rows N] [--then FILE TEXT] -- COMMAND...

A frame is counted at each cursor-home sequence (ESC [ H). With --then, FILE is rewritten with
TEXT once the first frame is complete, so that a later frame shows the machine as it is then.
"""
import os
import pty
import select
import signal
import struct
import sys
import termios
import fcntl
import time

HOME = b"\x1b[H"
END_OF_FRAME = b"\x1b[J"


def main():
    args = sys.argv[1:]
    split = args.index("--")
    options, command = args[:split], args[split + 1:]
    frames, signal_name, output = int(options[0]), options[1], options[2]
    rows, then = 24, None
    rest = options[3:]
    while rest:
        if rest[0] == "--rows":
            rows, rest = int(rest[1]), rest[2:]
        elif rest[0] == "--then":
            then, rest = (rest[1], rest[2]), rest[3:]
        else:
            sys.exit("watch_pty.py: unknown option " + rest[0])

    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 100, 0, 0))
    drawn = b""
    deadline = time.monotonic() + 20
    rewritten = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
        complete = drawn.count(END_OF_FRAME)
        if then and not rewritten and complete >= 1:
            with open(then[0], "w") as f:
                f.write(then[1].replace("\\n", "\n"))
            rewritten = True
        if complete >= frames:
            break
    os.kill(pid, getattr(signal, signal_name))
    # Whatever it writes while stopping (restoring the cursor) is part of the output.
    while True:
        ready, _, _ = select.select([fd], [], [], 2)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    _, status = os.waitpid(pid, 0)
    with open(output, "wb") as f:
        f.write(drawn)
    if os.WIFSIGNALED(status):
        print(128 + os.WTERMSIG(status))
    else:
        print(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
