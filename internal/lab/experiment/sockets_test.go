package experiment

import (
	"net/netip"
	"testing"
)

// Captured with `ss -tinoHO` (iproute2 6.1) on this machine: a listener, a receiving
// client, a sender with one retransmission, and a client in its handshake after one
// SYN retransmission.
const ssCapture = `LISTEN 0      128    127.0.0.1:19100   0.0.0.0:*     bbr cwnd:10
ESTAB  100000 0      10.77.0.1:54904 10.77.0.2:8080 ts sack bbr wscale:10,10 rto:200 rtt:0.03/0.015 ato:80 mss:32768 pmtu:65535 rcvmss:34464 advmss:65483 cwnd:10 bytes_acked:1 bytes_received:100000 segs_out:4 segs_in:5 data_segs_in:4 bbr:(bw:0bps,mrtt:0.03,pacing_gain:1,cwnd_gain:1) send 87381333333bps lastsnd:504 lastrcv:504 lastack:496 pacing_rate 249517099808bps delivered:1 app_limited reordering:15 rcv_rtt:0.025 rcv_space:65495 rcv_ssthresh:94806 minrtt:0.03 snd_wnd:65536
ESTAB  0      0      10.77.0.1:54906 10.77.0.2:8080 timer:(on,408ms,1) ts sack bbr wscale:10,10 rto:408 backoff:1 rtt:5.266/10.503 mss:47616 pmtu:65535 rcvmss:536 advmss:65483 cwnd:1 bytes_sent:134464 bytes_retrans:34464 bytes_acked:100000 segs_out:4 segs_in:4 data_segs_out:4 send 1012721610bps lastsnd:496 lastrcv:504 lastack:460 delivered:5 busy:44ms retrans:1/3 lost:1 dsack_dups:1 reordering:15 minrtt:0.016 snd_wnd:28672
SYN-SENT 0      1      10.77.0.1:54908 10.77.0.2:8443 timer:(on,1.8s,1) cubic rto:2000 backoff:1 mss:524 pmtu:1500 rcvmss:88 advmss:1460 cwnd:1 ssthresh:7 segs_out:2 lastsnd:200 lastrcv:200 lastack:200 retrans:1/1 lost:1
garbage
`

func TestParseSS(t *testing.T) {
	socks := parseSS(ssCapture)
	if len(socks) != 3 {
		t.Fatalf("%d sockets, want 3 (the listener and the garbage line skipped): %+v", len(socks), socks)
	}
	rx := socks[0]
	if rx.State != "ESTAB" || rx.Local != netip.MustParseAddrPort("10.77.0.1:54904") || rx.BytesReceived != 100000 || rx.SegsIn != 5 || rx.TotalRetrans != 0 || rx.RTOms != 200 {
		t.Errorf("receiver = %+v", rx)
	}
	tx := socks[1]
	if tx.BytesSent != 134464 || tx.BytesRetrans != 34464 || tx.Retrans != 1 || tx.TotalRetrans != 3 || tx.Lost != 1 || tx.Backoff != 1 || tx.RTOms != 408 {
		t.Errorf("sender = %+v", tx)
	}
	if syn := socks[2]; syn.State != "SYN-SENT" || syn.Peer.Port() != 8443 || syn.TotalRetrans != 1 {
		t.Errorf("handshake = %+v", syn)
	}
}

func TestSockSamplerFold(t *testing.T) {
	s := &sockSampler{conns: map[uint16]*ClientConn{}}
	server := netip.MustParseAddr("10.77.0.2")
	s.fold(1000, parseSS(ssCapture), server)
	// 1.2 s later the handshake is done and the receiver has more.
	later := `SYN-SENT 0 1 10.77.0.1:54908 10.77.0.2:8443 cubic rto:2000 backoff:1 retrans:1/1
ESTAB 0 0 10.77.0.1:54904 10.77.0.2:8080 bbr rto:204 bytes_received:150000 retrans:0/1
ESTAB 0 0 10.77.0.1:60000 10.99.0.9:8080 bbr rto:204 bytes_received:1
`
	s.fold(2200, parseSS(later), server)
	s.fold(2400, parseSS("ESTAB 0 0 10.77.0.1:54908 10.77.0.2:8443 cubic rto:204 bytes_received:10 retrans:0/1\n"), server)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 3 || s.samples != 3 {
		t.Fatalf("%d connections in %d samples, want 3 in 3 (another peer's socket is not the client's): %+v", len(s.conns), s.samples, s.conns)
	}
	rx := s.conns[54904]
	if rx.FirstMS != 1000 || rx.LastMS != 2200 || rx.BytesReceived != 150000 || rx.TotalRetrans != 1 || rx.SynSentMS != 0 {
		t.Errorf("receiver = %+v", rx)
	}
	if syn := s.conns[54908]; syn.SynSentMS != 1200 || syn.MaxBackoff != 1 || syn.LastMS != 2400 {
		t.Errorf("slow handshake = %+v, want 1200 ms in SYN-SENT", syn)
	}
	if tx := s.conns[54906]; tx.MaxBackoff != 1 || tx.MaxLost != 1 || tx.MaxRTOms != 408 {
		t.Errorf("sender in backoff = %+v", tx)
	}
}

func TestParseSSSenderState(t *testing.T) {
	line := "ESTAB 0 0 [::ffff:10.77.0.2]:8080 [::ffff:10.77.0.1]:54906 ts sack bbr wscale:10,10 rto:208 cwnd:14 unacked:3 bytes_sent:134464 bbr:(bw:10581315672bps,mrtt:0.016,pacing_gain:2.88672,cwnd_gain:2.88672) send 1012721610bps pacing_rate 468230400bps delivery_rate 27.8Mbps retrans:0/1\n"
	s := parseSS(line)
	if len(s) != 1 {
		t.Fatalf("%d sockets", len(s))
	}
	k := s[0]
	if k.CC != "bbr" || k.Cwnd != 14 || k.Unacked != 3 || k.PacingKbps != 468230 || k.DeliveryKbps != 27800 || k.BBRBwKbps != 10581315 || k.TotalRetrans != 1 {
		t.Errorf("sender state = %+v", k)
	}
	srv := &sockSampler{conns: map[uint16]*ClientConn{}, serverSide: true}
	srv.fold(7, s, netip.MustParseAddr("10.77.0.1"))
	if len(srv.rows) != 1 || srv.rows[0] != [9]int64{7, 54906, 14, 3, 468230, 27800, 10581315, 1, 0} || srv.conns[54906] == nil {
		t.Errorf("server timeline = %v, connections %v; want one row keyed by the client's port", srv.rows, srv.conns)
	}
	for v, want := range map[string]int64{"1.5Mbps": 1500, "2Gbps": 2000000, "999bps": 0, "x": 0} {
		if got := parseRate(v); got != want {
			t.Errorf("parseRate(%q) = %d, want %d", v, got, want)
		}
	}
}
