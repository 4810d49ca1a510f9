package netem

import (
	"encoding/binary"
	"testing"
)

// tcpPacket builds an IPv4 TCP packet with payload bytes of data.
func tcpPacket(sport, dport uint16, seq uint32, flags byte, payload int) []byte {
	p := make([]byte, 20+20+payload)
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:4], uint16(len(p)))
	p[9] = 6
	t := p[20:]
	binary.BigEndian.PutUint16(t[0:2], sport)
	binary.BigEndian.PutUint16(t[2:4], dport)
	binary.BigEndian.PutUint32(t[4:8], seq)
	t[12] = 5 << 4
	t[13] = flags
	return p
}

func TestDescribeDrop(t *testing.T) {
	d := describeDrop(tcpPacket(41000, 8080, 7, 0x18, 300), "loss")
	if d.Why != "loss" || d.Proto != 6 || d.SrcPort != 41000 || d.DstPort != 8080 || d.Seq != 7 || d.Flags != "AP" || d.Payload != 300 || d.MS == 0 {
		t.Errorf("request = %+v", d)
	}
	if d := describeDrop(tcpPacket(41000, 8443, 1, 0x02, 0), "queue"); d.Flags != "S" || d.Payload != 0 || d.Why != "queue" {
		t.Errorf("SYN = %+v", d)
	}
	for _, bad := range [][]byte{nil, {0x45}, tcpPacket(1, 2, 3, 0x10, 0)[:30], append([]byte{0x60}, make([]byte, 60)...)} {
		if d := describeDrop(bad, "loss"); d.SrcPort != 0 || d.Flags != "" || d.Payload != len(bad) {
			t.Errorf("short or non-IPv4 packet %x read as %+v, want its size only", bad, d)
		}
	}
}

func TestDropLogBounded(t *testing.T) {
	var l dropLog
	for i := range dropLogSize + 10 {
		l.add(Drop{MS: int64(i)})
	}
	all := l.since(0)
	if len(all) != dropLogSize || all[0].MS != 10 || all[len(all)-1].MS != dropLogSize+9 {
		t.Fatalf("kept %d, first %d, last %d; want the last %d in order", len(all), all[0].MS, all[len(all)-1].MS, dropLogSize)
	}
	if got := l.since(dropLogSize + 5); len(got) != 5 {
		t.Errorf("since: %d drops, want 5", len(got))
	}
}

func FuzzDescribeDrop(f *testing.F) {
	f.Add(tcpPacket(41000, 8080, 7, 0x18, 300))
	f.Add([]byte{0x45, 0, 0, 20})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := describeDrop(b, "loss")
		if d.Payload < 0 || d.Payload > len(b) {
			t.Fatalf("payload %d of a %d-byte packet", d.Payload, len(b))
		}
	})
}
