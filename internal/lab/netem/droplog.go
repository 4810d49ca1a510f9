package netem

import (
	"encoding/binary"
	"sync"
	"time"
)

// Drop is one packet a user-space link direction did not deliver, with enough of its
// TCP header to tell which exchange lost it: a request, a response's tail, an ACK, a
// handshake. Other packets carry only their time, reason and size.
type Drop struct {
	MS      int64  `json:"ms"`  // epoch ms
	Why     string `json:"why"` // "loss" (the profile's random loss) or "queue" (drop-tail)
	Proto   uint8  `json:"proto"`
	SrcPort uint16 `json:"sport"`
	DstPort uint16 `json:"dport"`
	Flags   string `json:"flags"`   // TCP flags: S, A, P, F, R
	Payload int    `json:"payload"` // TCP payload bytes
	Seq     uint32 `json:"seq"`
}

// dropLogSize bounds the log per direction: a 60 s run at 1 % loss drops ~100.
const dropLogSize = 4096

// dropLog keeps the last dropLogSize drops of one direction.
type dropLog struct {
	mu   sync.Mutex
	ring []Drop
	next int
}

func (d *dropLog) add(x Drop) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ring) < dropLogSize {
		d.ring = append(d.ring, x)
		return
	}
	d.ring[d.next] = x
	d.next = (d.next + 1) % dropLogSize
}

// since is the drops at or after epoch ms, oldest first.
func (d *dropLog) since(ms int64) []Drop {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Drop
	for i := range d.ring {
		x := d.ring[(d.next+i)%len(d.ring)]
		if x.MS >= ms {
			out = append(out, x)
		}
	}
	return out
}

// describeDrop reads what it can of an IPv4 packet's TCP header; anything shorter or
// other is kept by size only.
func describeDrop(pkt []byte, why string) Drop {
	d := Drop{MS: time.Now().UnixMilli(), Why: why, Payload: len(pkt)}
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return d
	}
	ihl := int(pkt[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(pkt[2:4]))
	d.Proto = pkt[9]
	if d.Proto != 6 || ihl < 20 || len(pkt) < ihl+20 || total > len(pkt) || total < ihl+20 {
		return d
	}
	t := pkt[ihl:]
	d.SrcPort = binary.BigEndian.Uint16(t[0:2])
	d.DstPort = binary.BigEndian.Uint16(t[2:4])
	d.Seq = binary.BigEndian.Uint32(t[4:8])
	off := int(t[12]>>4) * 4
	d.Payload = max(0, total-ihl-off)
	for _, f := range []struct {
		bit  byte
		name string
	}{{0x02, "S"}, {0x10, "A"}, {0x08, "P"}, {0x01, "F"}, {0x04, "R"}} {
		if t[13]&f.bit != 0 {
			d.Flags += f.name
		}
	}
	return d
}
