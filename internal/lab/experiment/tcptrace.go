package experiment

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TCPEvent is one loss-recovery event of the kernel's TCP tracepoints on a connection
// between the lab's client and origin: a retransmitted segment (a SYN's, in the
// handshake) or a change of the sender's congestion state — "loss" is the state an
// RTO puts a sender in, "recovery" fast retransmit's. A retransmission while the
// sender stays "open" is a tail loss probe.
type TCPEvent struct {
	MS   int64  // epoch ms
	Side string // "client" or "server": whose sender
	Kind string // retransmit, syn_retransmit, synack_retransmit, open, disorder, cwr, recovery, loss
	Port uint16 // the client's port on the connection
}

// congStates names tcp_cong_state_set's cong_state (enum tcp_ca_state).
var congStates = []string{"open", "disorder", "cwr", "recovery", "loss"}

// tcpTrace is a private tracefs instance with the TCP loss tracepoints on, for the
// span of one run. The tracepoints are machine-wide: events are kept only for the
// origin's address and ports, and later only for the client ports the lab's own
// client namespace had (another lab on the machine may use the same addresses).
type tcpTrace struct {
	dir        string
	wall0      time.Time
	mono0      time.Duration
	server     netip.Addr
	ports      []uint16
	why        string // why there is no trace, when there is none
	traceBytes int
}

const tracefs = "/sys/kernel/tracing"

// startTCPTrace enables the tracepoints; on any failure it returns a tcpTrace that
// says why (the run goes on without it).
func startTCPTrace(server netip.Addr, ports ...uint16) *tcpTrace {
	removeStaleTraces()
	t := &tcpTrace{server: server, ports: ports}
	t.dir = filepath.Join(tracefs, "instances", fmt.Sprintf("streambed-lab-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(t.dir, 0o755); err != nil {
		t.why, t.dir = "no tracefs instance: "+err.Error(), ""
		return t
	}
	var conds []string
	for _, p := range ports {
		conds = append(conds, fmt.Sprintf("sport == %d || dport == %d", p, p))
	}
	filter := strings.Join(conds, " || ")
	steps := [][2]string{
		{"trace_clock", "mono"},
		{"buffer_size_kb", "8192"}, // per CPU: room for another lab's bulk flows on the same addresses,
		{"events/tcp/tcp_retransmit_skb/filter", filter},
		{"events/tcp/tcp_retransmit_synack/filter", filter},
		{"events/tcp/tcp_cong_state_set/filter", filter},
		{"events/tcp/tcp_retransmit_skb/enable", "1"},
		{"events/tcp/tcp_retransmit_synack/enable", "1"},
		{"events/tcp/tcp_cong_state_set/enable", "1"},
	}
	for _, s := range steps {
		if err := os.WriteFile(filepath.Join(t.dir, s[0]), []byte(s[1]), 0o644); err != nil {
			t.why = "tracefs: " + err.Error()
			t.close()
			return t
		}
	}
	t.wall0, t.mono0 = time.Now(), monoNow()
	return t
}

// removeStaleTraces removes the instances of lab processes that are gone (killed
// before they could remove their own), so their tracepoints stop costing anything.
func removeStaleTraces() {
	dirs, _ := filepath.Glob(filepath.Join(tracefs, "instances", "streambed-lab-*"))
	for _, d := range dirs {
		var pid, ns int
		if _, err := fmt.Sscanf(filepath.Base(d), "streambed-lab-%d-%d", &pid, &ns); err != nil || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err == unix.ESRCH {
			_ = os.WriteFile(filepath.Join(d, "events/tcp/enable"), []byte("0"), 0o644)
			_ = os.Remove(d)
		}
	}
}

func monoNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// stop disables the tracepoints, reads the events and removes the instance.
func (t *tcpTrace) stop() []TCPEvent {
	if t.dir == "" {
		return nil
	}
	_ = os.WriteFile(filepath.Join(t.dir, "events/tcp/enable"), []byte("0"), 0o644)
	b, err := os.ReadFile(filepath.Join(t.dir, "trace"))
	t.close()
	if err != nil {
		t.why = "tracefs: " + err.Error()
		return nil
	}
	t.traceBytes = len(b)
	// mono seconds → epoch ms, through the pair of clocks read at the start.
	toEpoch := func(sec float64) int64 {
		return t.wall0.Add(time.Duration(sec*1e9) - t.mono0).UnixMilli()
	}
	return parseTCPTrace(string(b), t.server, toEpoch)
}

func (t *tcpTrace) close() {
	if t.dir != "" {
		_ = os.Remove(t.dir)
		t.dir = ""
	}
}

// parseTCPTrace reads a tracefs `trace` file's tcp_retransmit_skb,
// tcp_retransmit_synack and tcp_cong_state_set lines into events on connections with
// server (side by which end sent); other lines are skipped. toEpoch maps the line's
// timestamp (s) to epoch ms.
func parseTCPTrace(text string, server netip.Addr, toEpoch func(float64) int64) []TCPEvent {
	var out []TCPEvent
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		// "  TASK-PID [CPU] FLAGS  TIMESTAMP: EVENT: k=v k=v ..."
		head, rest, ok := strings.Cut(line, ": tcp_")
		if !ok {
			continue
		}
		hf := strings.Fields(head)
		if len(hf) == 0 {
			continue
		}
		sec, err := strconv.ParseFloat(strings.TrimSuffix(hf[len(hf)-1], ":"), 64)
		if err != nil {
			continue
		}
		name, args, _ := strings.Cut(rest, ": ")
		kv := map[string]string{}
		for _, f := range strings.Fields(args) {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = v
			}
		}
		saddr, err1 := netip.ParseAddr(kv["saddr"])
		daddr, err2 := netip.ParseAddr(kv["daddr"])
		sport, err3 := strconv.ParseUint(kv["sport"], 10, 16)
		dport, err4 := strconv.ParseUint(kv["dport"], 10, 16)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		e := TCPEvent{MS: toEpoch(sec)}
		switch {
		case saddr == server:
			e.Side, e.Port = "server", uint16(dport)
		case daddr == server:
			e.Side, e.Port = "client", uint16(sport)
		default:
			continue
		}
		switch name {
		case "retransmit_skb":
			e.Kind = "retransmit"
			if kv["state"] == "TCP_SYN_SENT" {
				e.Kind = "syn_retransmit"
			}
		case "retransmit_synack":
			e.Kind = "synack_retransmit"
		case "cong_state_set":
			n, err := strconv.Atoi(kv["cong_state"])
			if err != nil || n < 0 || n >= len(congStates) {
				continue
			}
			e.Kind = congStates[n]
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}
