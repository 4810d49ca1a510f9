#!/usr/bin/env python3
"""xmit-classify.py — the packets a server put on loopback, by size and by what sent
them: `perf script` text of `perf record -g -e net:net_dev_xmit` (bench/ws-steady.sh,
XMIT=1), from stdin.

Usage: perf script -i xmit.data | bench/xmit-classify.py MESSAGES
MESSAGES: the messages the server sent over the same window (0: counts only).
Each packet is put in a size class (by the tracepoint's len: an ACK is < 100 B, a
frame's header sent alone a few dozen to a few hundred) and given a cause, the first
kernel function of its stack (leaf first) that names why TCP sent then: the send call
itself (__tcp_push_pending_frames), an ACK from the reader that let queued data go
(tcp_data_snd_check), TCP small queues (tcp_tsq_handler), the socket's release
(tcp_release_cb), an ACK (on loopback the reader's ACK is sent in the sender's context,
from the receive path under the sender's own transmit).
"""
import collections, re, sys

CAUSES = [  # the stack's first frame (leaf first) matching any of these names the cause
    ("ACK sent (receiver's or delayed)", ("__tcp_send_ack", "tcp_send_ack", "tcp_send_delayed_ack", "tcp_v4_do_rcv", "tcp_rcv_established")),
    ("data sent when an ACK arrived (tcp_data_snd_check)", ("tcp_data_snd_check", "tcp_ack_snd_check")),
    ("TCP small queues (tcp_tsq_handler)", ("tcp_tsq_handler", "tcp_tsq_write", "tcp_tasklet_func")),
    ("socket release (tcp_release_cb)", ("tcp_release_cb",)),
    ("send call: its push (tcp_push)", ("tcp_push", "__tcp_push_pending_frames", "tcp_push_one")),
    ("send call: sendfile/splice", ("do_sendfile", "splice_direct_to_actor", "do_splice_direct")),
    ("send call: sendmsg/writev", ("tcp_sendmsg", "do_writev", "sock_write_iter")),
    ("retransmit or timer", ("tcp_retransmit", "tcp_write_timer", "tcp_delack_timer")),
]


def size_class(n):
    return "<100" if n < 100 else "100-999" if n < 1000 else "1000-15999" if n < 16000 else "16000-59999" if n < 60000 else ">=60000"


def events(lines):
    head, frames = None, []
    for line in lines:
        if not line.strip():
            if head:
                yield head, frames
            head, frames = None, []
        elif line.startswith((" ", "\t")):
            p = line.split()
            if len(p) >= 2:
                frames.append(p[1].split("+")[0])
        else:
            head = line
    if head:
        yield head, frames


def main():
    msgs = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    by_size, by_cause, bytes_ = collections.Counter(), collections.Counter(), collections.Counter()
    total = 0
    for head, frames in events(sys.stdin):
        m = re.search(r"len=(\d+)", head)
        if not m:
            continue
        n = int(m.group(1))
        cause = next((c for f in frames for c, keys in CAUSES if any(k == f for k in keys)), "other")
        sc = size_class(n)
        total += 1
        by_size[sc] += 1
        bytes_[sc] += n
        by_cause[(cause, sc)] += 1
    per = (lambda k: f"{k / msgs:.3f}") if msgs else (lambda k: "")
    print(f"packets {total}, messages {msgs}, packets per message {per(total)}")
    print()
    print("| size (B) | packets | per message | mean bytes |")
    print("|---|---:|---:|---:|")
    for sc in sorted(by_size, key=lambda s: ["<100", "100-999", "1000-15999", "16000-59999", ">=60000"].index(s)):
        print(f"| {sc} | {by_size[sc]} | {per(by_size[sc])} | {bytes_[sc] / by_size[sc]:.0f} |")
    print()
    print("| cause (first match in the stack, leaf first) | size (B) | packets | per message |")
    print("|---|---|---:|---:|")
    for (cause, sc), k in by_cause.most_common():
        print(f"| {cause} | {sc} | {k} | {per(k)} |")


if __name__ == "__main__":
    main()
