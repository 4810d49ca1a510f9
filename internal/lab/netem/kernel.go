package netem

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The kernel backend joins two hosts with a veth pair and shapes each end's egress
// with tc: netem (delay, jitter, loss, duplication, corruption, reordering) with a
// tbf child for the rate and its queue. On a kernel without netem it can still do
// a rate (tbf) and Bernoulli loss (an iptables statistic rule); anything else needs
// the user-space backend.

// probeNetem reports whether the kernel has the netem qdisc, trying it on a veth in a
// scratch namespace (which the caller has recorded for cleanup).
func probeNetem(ctx context.Context, ns string) (bool, error) {
	if err := ip(ctx, "netns", "add", ns); err != nil {
		return false, err
	}
	defer deleteNamespace(ns)
	if err := ip(ctx, "-n", ns, "link", "add", "sb-probe0", "type", "veth", "peer", "name", "sb-probe1"); err != nil {
		return false, err
	}
	err := run(ctx, "tc", "-n", ns, "qdisc", "add", "dev", "sb-probe0", "root", "netem", "delay", "1ms")
	return err == nil, nil
}

// kernelDir shapes one direction: the egress of dev in namespace ns, with random
// loss on the ingress of its peer (peerDev in peerNS) when there is no netem — a
// drop on the sender's side would fail the sender's write with EPERM, which no real
// link does.
type kernelDir struct {
	ns, dev         string
	peerNS, peerDev string
	netem           bool // the kernel has netem

	mu      sync.Mutex
	lossArg []string // iptables rule in place, to delete on change
	stop    context.CancelFunc
	done    chan struct{}
}

// apply replaces the direction's shaping with m.
func (k *kernelDir) apply(ctx context.Context, m Impairment) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopSchedule()
	_ = run(ctx, "tc", "-n", k.ns, "qdisc", "del", "dev", k.dev, "root")
	if k.lossArg != nil {
		_ = run(ctx, "ip", append([]string{"netns", "exec", k.peerNS, "iptables", "-t", "mangle", "-D"}, k.lossArg...)...)
		k.lossArg = nil
	}
	if m.IsZero() {
		return nil
	}
	if m.Rate.Trace != nil {
		return errors.New("kernel backend: rate traces need the user-space backend")
	}
	tbfParent := []string{"root", "handle", "10:"}
	if k.netem {
		args := netemArgs(m)
		if len(args) > 0 {
			if err := run(ctx, "tc", append([]string{"-n", k.ns, "qdisc", "replace", "dev", k.dev, "root", "handle", "1:", "netem"}, args...)...); err != nil {
				return err
			}
			tbfParent = []string{"parent", "1:1", "handle", "10:"}
		}
	} else {
		if err := kernelWithoutNetem(m); err != nil {
			return err
		}
		if m.Loss.P > 0 {
			k.lossArg = []string{"PREROUTING", "-i", k.peerDev, "-m", "statistic", "--mode", "random",
				"--probability", strconv.FormatFloat(m.Loss.P.Fraction(), 'f', 6, 64), "-j", "DROP"}
			if err := run(ctx, "ip", append([]string{"netns", "exec", k.peerNS, "iptables", "-t", "mangle", "-A"}, k.lossArg...)...); err != nil {
				k.lossArg = nil
				return err
			}
		}
	}
	if m.Rate.IsZero() {
		return nil
	}
	first := m.Rate.Constant
	if len(m.Rate.Steps) > 0 {
		first = max(m.Rate.Steps[0].Rate, 8) // tbf has no rate 0: an outage is a trickle
	}
	if err := run(ctx, "tc", append(append([]string{"-n", k.ns, "qdisc", "replace", "dev", k.dev}, tbfParent...), tbfArgs(first, m)...)...); err != nil {
		return err
	}
	if len(m.Rate.Steps) > 0 {
		k.startSchedule(m, tbfParent)
	}
	return nil
}

// kernelWithoutNetem explains what a kernel without netem cannot do.
func kernelWithoutNetem(m Impairment) error {
	var missing []string
	if m.Delay > 0 || m.Jitter > 0 {
		missing = append(missing, "delay/jitter")
	}
	if m.Loss.ge() {
		missing = append(missing, "gilbert-elliott loss")
	}
	if m.Duplicate > 0 {
		missing = append(missing, "duplication")
	}
	if m.Corrupt > 0 {
		missing = append(missing, "corruption")
	}
	if m.Reorder > 0 {
		missing = append(missing, "reordering")
	}
	if len(missing) > 0 {
		return fmt.Errorf("this kernel has no netem qdisc, so the kernel backend cannot do %s; use --backend userspace", strings.Join(missing, ", "))
	}
	return nil
}

// netemArgs renders the netem part of m (without the rate, which tbf does).
func netemArgs(m Impairment) []string {
	var a []string
	if m.Delay > 0 || m.Jitter > 0 {
		a = append(a, "delay", usec(m.Delay.D()))
		if m.Jitter > 0 {
			a = append(a, usec(m.Jitter.D()))
			if m.Distribution == "normal" {
				a = append(a, "distribution", "normal")
			}
		}
	}
	if !m.Loss.IsZero() {
		if m.Loss.ge() {
			p, r, lg, lb := m.Loss.GEParams()
			a = append(a, "loss", "gemodel", pct(p), pct(r), pct(lb), pct(lg))
		} else {
			a = append(a, "loss", "random", pct(m.Loss.P.Fraction()))
		}
	}
	if m.Duplicate > 0 {
		a = append(a, "duplicate", pct(m.Duplicate.Fraction()))
	}
	if m.Corrupt > 0 {
		a = append(a, "corrupt", pct(m.Corrupt.Fraction()))
	}
	if m.Reorder > 0 && m.Delay > 0 {
		a = append(a, "reorder", pct(m.Reorder.Fraction()))
	}
	if m.Jitter > 0 && !m.JitterReorders {
		// netem keeps packets in order when it has a rate: use one far above any
		// link's so only the ordering changes.
		a = append(a, "rate", "100gbit")
	}
	if len(a) > 0 {
		a = append([]string{"limit", "100000"}, a...)
	}
	return a
}

// tbfArgs renders a tbf qdisc at rate r with m's burst and queue.
func tbfArgs(r Rate, m Impairment) []string {
	bytesPerSec := float64(r) / 8
	burst := int64(m.Burst)
	// tbf needs room for a full frame, and at least a few ms of tokens to keep the
	// rate with a timer-driven dequeue.
	burst = max(burst, 2*1514, int64(bytesPerSec*0.004))
	a := []string{"tbf", "rate", strconv.FormatInt(int64(math.Round(float64(r))), 10) + "bit", "burst", strconv.FormatInt(burst, 10)}
	switch {
	case m.Queue.Latency > 0:
		a = append(a, "latency", usec(m.Queue.Latency.D()))
	case m.Queue.Bytes > 0:
		a = append(a, "limit", strconv.FormatInt(int64(m.Queue.Bytes)+burst, 10))
	default:
		pk := m.Queue.Packets
		if pk == 0 {
			pk = DefaultQueuePackets
		}
		a = append(a, "limit", strconv.FormatInt(int64(pk)*1514+burst, 10))
	}
	return a
}

func usec(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }
func pct(f float64) string        { return strconv.FormatFloat(f*100, 'f', -1, 64) + "%" }

// startSchedule changes the tbf rate at each step of a schedule.
func (k *kernelDir) startSchedule(m Impairment, parent []string) {
	ctx, cancel := context.WithCancel(context.Background())
	k.stop = cancel
	k.done = make(chan struct{})
	go func() {
		defer close(k.done)
		next := time.Now()
		for n := 0; ; n++ {
			st := m.Rate.Steps[n%len(m.Rate.Steps)]
			if n > 0 { // apply set the first step
				r := st.Rate
				if r == 0 {
					r = 8 // tbf has no rate 0: an outage is a trickle
				}
				_ = run(ctx, "tc", append(append([]string{"-n", k.ns, "qdisc", "change", "dev", k.dev}, parent...), tbfArgs(r, m)...)...)
			}
			next = next.Add(st.For.D())
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
		}
	}()
}

func (k *kernelDir) stopSchedule() {
	if k.stop != nil {
		k.stop()
		<-k.done
		k.stop, k.done = nil, nil
	}
}

func (k *kernelDir) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopSchedule()
}
