#!/usr/bin/python3
"""Hold many idle or trickling connections to the agent from one client
address, bounded in count and time, for tests/hostile.sh.

conn-flood.py PORT SOURCE_ADDR IDLE TRICKLE HOLD_SECONDS
Opens IDLE connections that send nothing and TRICKLE that send a request
line and then one header byte per second, prints "holding N" once they are
open (the caller then probes /v1/health), and after HOLD_SECONDS prints
"accepted=A closed_by_agent=C still_open=S": a connection the agent refused
(over its per-client limit) or timed out counts as closed.
"""
import select
import socket
import sys
import time


def open_conn(port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    return s


def closed(s):
    """True when the agent closed (or reset) the connection."""
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        return False
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def main():
    port, source = int(sys.argv[1]), sys.argv[2]
    idle, trickle, hold = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    conns = [open_conn(port, source) for _ in range(idle + trickle)]
    conns = [c for c in conns if c is not None]
    trickling = conns[idle:]
    for s in trickling:
        try:
            s.send(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        except OSError:
            pass
    print(f"holding {len(conns)}", flush=True)
    end = time.monotonic() + hold
    while time.monotonic() < end:
        for s in trickling:
            try:
                s.send(b"a")
            except OSError:
                pass
        time.sleep(1)
    gone = sum(1 for s in conns if closed(s))
    print(f"accepted={len(conns)} closed_by_agent={gone} "
          f"still_open={len(conns) - gone}", flush=True)
    for s in conns:
        s.close()


if __name__ == "__main__":
    main()
