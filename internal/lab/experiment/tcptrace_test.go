package experiment

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Captured from a tracefs instance on this machine (tcp_cong_state_set,
// tcp_retransmit_skb, tcp_retransmit_synack), with one line of another address pair,
// one of an unknown congestion state and a truncated one.
const traceCapture = `# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
  streambed-32541   [000] b..1. 62270.131695: tcp_cong_state_set: family=AF_INET sport=8080 dport=37660 saddr=10.77.0.2 daddr=10.77.0.1 saddrv6=::ffff:10.77.0.2 daddrv6=::ffff:10.77.0.1 cong_state=4
          <idle>-0       [001] ..s2. 62270.382001: tcp_retransmit_skb: skbaddr=000000008a1f skaddr=00000000c4d2 family=AF_INET sport=8080 dport=37660 saddr=10.77.0.2 daddr=10.77.0.1 saddrv6=::ffff:10.77.0.2 daddrv6=::ffff:10.77.0.1 state=TCP_ESTABLISHED err=0
          chrome-900     [000] ..s1. 62271.000500: tcp_retransmit_skb: skbaddr=000000001 skaddr=000000002 family=AF_INET sport=41000 dport=8443 saddr=10.77.0.1 daddr=10.77.0.2 saddrv6=::ffff:10.77.0.1 daddrv6=::ffff:10.77.0.2 state=TCP_SYN_SENT err=0
          <idle>-0       [000] ..s1. 62271.200000: tcp_retransmit_synack: family=AF_INET sport=8443 dport=41000 saddr=10.77.0.2 daddr=10.77.0.1 saddrv6=::ffff:10.77.0.2 daddrv6=::ffff:10.77.0.1
          <idle>-0       [000] ..s1. 62271.300000: tcp_cong_state_set: family=AF_INET sport=40000 dport=8080 saddr=10.77.0.1 daddr=10.77.0.2 saddrv6=:: daddrv6=:: cong_state=3
          <idle>-0       [000] ..s1. 62271.300000: tcp_cong_state_set: family=AF_INET sport=9 dport=8080 saddr=10.1.0.1 daddr=10.1.0.2 saddrv6=:: daddrv6=:: cong_state=3
          <idle>-0       [000] ..s1. 62271.300000: tcp_cong_state_set: family=AF_INET sport=40000 dport=8080 saddr=10.77.0.1 daddr=10.77.0.2 saddrv6=:: daddrv6=:: cong_state=9
          <idle>-0       [000] ..s1. 62271.3: tcp_retransmit_skb: skbaddr=
`

func TestParseTCPTrace(t *testing.T) {
	server := netip.MustParseAddr("10.77.0.2")
	ev := parseTCPTrace(traceCapture, server, func(s float64) int64 { return int64(s * 1000) })
	want := []TCPEvent{
		{MS: 62270131, Side: "server", Kind: "loss", Port: 37660},
		{MS: 62270382, Side: "server", Kind: "retransmit", Port: 37660},
		{MS: 62271000, Side: "client", Kind: "syn_retransmit", Port: 41000},
		{MS: 62271200, Side: "server", Kind: "synack_retransmit", Port: 41000},
		{MS: 62271300, Side: "client", Kind: "recovery", Port: 40000},
	}
	if len(ev) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(ev), len(want), ev)
	}
	for i := range want {
		if ev[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, ev[i], want[i])
		}
	}
}

func FuzzParseTCPTrace(f *testing.F) {
	f.Add(traceCapture)
	f.Add(ssCapture)
	server := netip.MustParseAddr("10.77.0.2")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range parseTCPTrace(s, server, func(x float64) int64 { return int64(x) }) {
			if e.Side != "client" && e.Side != "server" || e.Kind == "" {
				t.Fatalf("event %+v", e)
			}
		}
		_ = parseSS(s)
	})
}

// TestTCPTraceLive turns the tracepoints on and off in a private tracefs instance, as
// a lab run does, and checks that nothing is left behind.
func TestTCPTraceLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tracefs needs root (the lab runs as root)")
	}
	if _, err := os.Stat(tracefs + "/instances"); err != nil {
		t.Skipf("no tracefs at %s: %v", tracefs, err)
	}
	// An instance left by a lab process that is gone is removed by the next start.
	stale := filepath.Join(tracefs, "instances", fmt.Sprintf("streambed-lab-%d-1", deadPID(t)))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := startTCPTrace(netip.MustParseAddr("127.0.0.1"), 19199)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		_ = os.Remove(stale)
		t.Errorf("stale instance %s not removed: %v", stale, err)
	}
	if tr.why != "" {
		t.Fatalf("trace did not start: %s", tr.why)
	}
	dir := tr.dir
	_ = tr.stop()
	if tr.why != "" {
		t.Fatalf("trace did not stop: %s", tr.why)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("instance %s left behind: %v", dir, err)
	}
}

// deadPID is the id of a process that has exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
