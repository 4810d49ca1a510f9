#!/usr/bin/env python3
"""perf-classify.py — split a server's perf samples (`perf script` text, call stacks
from `perf record -g`) into what a steady-state message costs on loopback, for
bench/ws-steady.sh's decomposition table.

Usage: perf script -i perf.data | bench/perf-classify.py [US_PER_MESSAGE]
Prints one line per part: its share of the samples and, given the server's CPU per
message, its µs per message. A sample goes to the first part whose test matches its
stack (leaf first): the copy before the send path it sits in, the receiver's path
(on loopback the reader's TCP processing runs in the sender's context) before the
send path, and so on.
"""
import sys

KERNEL_PARTS = [
    ("copy of the payload into the socket", ("_copy_from_iter", "copy_user_enhanced", "rep_movs_alternative", "skb_copy_to_page")),
    ("receiver's TCP path (loopback, in the sender's context)", ("process_backlog", "__netif_receive_skb", "tcp_v4_rcv", "ip_rcv", "ip_local_deliver")),
    ("TCP send and loopback transmit", ("tcp_sendmsg", "do_sendfile", "do_writev", "do_iter_write", "tcp_write_xmit", "__tcp_transmit_skb", "sock_sendmsg", "do_splice", "splice_direct")),
    ("reading from sockets (requests)", ("tcp_recvmsg", "sock_recvmsg", "__sys_recvfrom", "do_readv", "ksys_read", "vfs_read")),
    ("accept, close, socket options", ("__sys_accept4", "do_accept", "__fput", "__x64_sys_close", "do_sys_openat2", "__sys_setsockopt")),
    ("epoll", ("do_epoll_wait", "ep_poll", "do_epoll_ctl", "ep_send_events")),
    ("sleep, wake-up, context switch", ("futex", "schedule", "finish_task_switch", "nanosleep", "try_to_wake_up", "hrtimer")),
]


def classify(frames):
    """frames: list of (symbol, dso), leaf first."""
    syms = [s for s, _ in frames]
    for name, keys in KERNEL_PARTS:
        if any(k in s for s in syms for k in keys):
            return name
    user = [(s, d) for s, d in frames if "kernel" not in d]
    joined = " ".join(s for s, _ in user)
    if "runtime.sysmon" in joined:
        return "Go runtime: monitor thread (sysmon)"
    if "gcBgMarkWorker" in joined or "runtime.gcDrain" in joined or "runtime.mallocgc" in joined or "runtime.bgsweep" in joined:
        return "Go runtime: GC and allocation"
    if "wspush." in joined:
        return "the fan-out's own code (wspush, user space)"
    if "ngx_" in joined or any("nginx" in d for _, d in user):
        return "nginx's own code (user space; its binary has no symbols)"
    if "runtime." in joined:
        return "Go runtime: scheduler, netpoll, other"
    if any("kernel" in d for _, d in frames):
        return "other kernel (system call entry, timers, interrupts)"
    return "other user space"


def samples(lines):
    block = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if block:
                yield block
            block = []
            continue
        if line.startswith((" ", "\t")):
            parts = line.split()
            if len(parts) >= 3:
                sym = parts[1].split("+")[0]
                block.append((sym, parts[-1]))
            elif len(parts) == 2:
                block.append((parts[1], ""))
        else:
            if block:
                yield block
            block = []
    if block:
        yield block


def main():
    per_msg = float(sys.argv[1]) if len(sys.argv) > 1 else None
    counts = {}
    total = 0
    for frames in samples(sys.stdin):
        c = classify(frames)
        counts[c] = counts.get(c, 0) + 1
        total += 1
    if total == 0:
        print("no samples")
        return
    print(f"| part | share of samples ({total}) |" + (" µs per message |" if per_msg else ""))
    print("|---|---:|" + ("---:|" if per_msg else ""))
    for c, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        row = f"| {c} | {100 * n / total:.1f}% |"
        if per_msg:
            row += f" {per_msg * n / total:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
