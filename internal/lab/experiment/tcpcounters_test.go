package experiment

import "testing"

func TestParseProcNet(t *testing.T) {
	text := []byte(`Tcp: RtoAlgorithm RtoMin OutSegs RetransSegs PassiveOpens
Tcp: 1 200 1000 12 3
Udp: InDatagrams
Udp: 5
TcpExt: TCPTimeouts TCPLossProbes TCPFastRetrans
TcpExt: 4 7 1
`)
	m, err := parseProcNet(text)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]int64{"Tcp:OutSegs": 1000, "Tcp:RetransSegs": 12, "Udp:InDatagrams": 5, "TcpExt:TCPTimeouts": 4, "TcpExt:TCPLossProbes": 7} {
		if m[k] != want {
			t.Errorf("%s = %d, want %d", k, m[k], want)
		}
	}
	after := map[string]int64{"Tcp:OutSegs": 1500, "Tcp:RetransSegs": 20, "TcpExt:TCPTimeouts": 6}
	d := counterDelta(m, after)
	if d["OutSegs"] != 500 || d["RetransSegs"] != 8 || d["TCPTimeouts"] != 2 {
		t.Errorf("delta = %v", d)
	}
	if counterDelta(nil, after) != nil {
		t.Error("a missing snapshot must give no delta")
	}
	if _, err := parseProcNet([]byte("Tcp: A B\nTcp: 1\n")); err == nil {
		t.Error("a values line shorter than its names must be an error")
	}
}
