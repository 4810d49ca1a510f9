package experiment

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/streambed/streambed/internal/lab/netem"
)

// serverTCPCounters are the kernel's TCP counters of the server host's namespace that
// say how its senders recovered lost packets during a run: retransmitted segments,
// retransmission timeouts (RTO, the slow recovery a lost tail packet of a small
// response often needs), tail loss probes (the fast one), fast retransmits. They are
// the whole namespace's: the origin is the only sender there.
var serverTCPCounters = []string{
	"Tcp:OutSegs", "Tcp:RetransSegs", "Tcp:PassiveOpens",
	"TcpExt:TCPTimeouts", "TcpExt:TCPLossProbes", "TcpExt:TCPLossProbeRecovery",
	"TcpExt:TCPFastRetrans", "TcpExt:TCPSlowStartRetrans", "TcpExt:TCPSpuriousRTOs",
}

// parseProcNet reads /proc/net/snmp or /proc/net/netstat text (pairs of lines: a
// header "Proto: Name ..." and its values "Proto: 1 ...") into "Proto:Name" → value.
func parseProcNet(text []byte) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	var head []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		if head == nil || head[0] != f[0] {
			head = f
			continue
		}
		if len(f) != len(head) {
			return nil, fmt.Errorf("%s: %d values for %d names", f[0], len(f)-1, len(head)-1)
		}
		for i := 1; i < len(f); i++ {
			if v, err := strconv.ParseInt(f[i], 10, 64); err == nil {
				out[f[0]+head[i]] = v
			}
		}
		head = nil
	}
	return out, sc.Err()
}

// tcpCounters reads host's TCP counters (nil when they cannot be read: the figures
// are extra, a run does not fail for them).
func tcpCounters(nw *netem.Network, host string) map[string]int64 {
	out, err := nw.Command(host, "cat", "/proc/net/snmp", "/proc/net/netstat").Output()
	if err != nil {
		return nil
	}
	m, err := parseProcNet(out)
	if err != nil {
		return nil
	}
	return m
}

// counterDelta is after − before of serverTCPCounters, keyed without the protocol
// prefix; nil when either is missing.
func counterDelta(before, after map[string]int64) map[string]int64 {
	return counterDeltaOf(serverTCPCounters, before, after)
}

// serverHost is the name of the topology's server host.
func serverHost(nw *netem.Network) string {
	for _, h := range nw.Hosts() {
		if nw.Addr(h) == nw.Server() {
			return h
		}
	}
	return ""
}
