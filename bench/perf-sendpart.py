#!/usr/bin/env python3
"""perf-sendpart.py — the "TCP send and loopback transmit" part of bench/perf-classify.py,
split further: of a server's `perf record -g` stacks (ws-steady.sh PROFILE=1,
KIND-profile.script.gz), the samples of that part by what they are doing (the first
match in the six frames nearest the leaf) and by leaf function, in µs per message.

Usage (from the repository's root): bench/perf-sendpart.py KIND-profile.script.gz US_PER_MESSAGE
"""
import sys, collections, gzip
sys.path.insert(0, "bench")
import importlib.util
spec = importlib.util.spec_from_file_location("pc", "bench/perf-classify.py"); pc = importlib.util.module_from_spec(spec); spec.loader.exec_module(pc)
path, us = sys.argv[1], float(sys.argv[2])
tot = 0; leaf = collections.Counter(); sub = collections.Counter()
SUB = [("memcg/accounting", ("mem_cgroup", "memcg", "__sk_mem", "sk_forced_mem", "page_counter")),
       ("skb alloc/free", ("alloc_skb", "kmem_cache", "kfree", "skb_release", "__slab", "kmalloc", "__alloc_pages", "consume_skb")),
       ("splice/sendfile pages", ("splice", "skb_splice", "filemap", "shmem", "folio", "page_cache")),
       ("syscall entry/exit, fd, poll", ("entry_SYSCALL", "syscall_exit", "do_syscall", "fdget", "__fget", "syscall_return", "fput")),
       ("locks", ("lock_sock", "release_sock", "_raw_spin", "__local_bh")),
       ("ip/dev xmit", ("ip_", "dev_", "loopback_xmit", "netif_rx", "__dev_queue", "validate_xmit", "skb_", "enqueue_to_backlog")),
       ("tcp", ("tcp_",)),]
for frames in pc.samples(gzip.open(path, "rt")):
    tot += 1
    if pc.classify(frames) != "TCP send and loopback transmit": continue
    leaf[frames[0][0]] += 1
    s = next((n for f, _ in frames[:6] for n, keys in SUB if any(k in f for k in keys)), "other")
    sub[s] += 1
print(f"{path}: samples {tot}, send part {sum(leaf.values())} = {us*sum(leaf.values())/tot:.2f} us")
for n, k in sub.most_common(): print(f"  {n:35s} {us*k/tot:.2f} us ({k})")
for f, k in leaf.most_common(12): print(f"     {f:40s} {us*k/tot:.2f} us ({k})")
