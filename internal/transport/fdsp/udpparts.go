package fdsp

import (
	"sort"
	"time"
)

// UDPPart is one substream's UDP part as the client saw it: how many of its
// packets were missing at their access unit's deadline, how many of those came
// after it (Late), and how close to their deadlines the packets came. It says
// whether a late packet was late against the playout clock (a packet that
// arrived before its deadline is never counted lost) and by how much.
type UDPPart struct {
	Substream uint32 `json:"substream"`
	BP        int    `json:"bp"`
	Packets   int    `json:"udp_packets"`
	Lost      int    `json:"lost"` // missing at their deadline, Late included
	Late      int    `json:"late"` // arrived after their deadline
	// MinMarginMS is the smallest deadline − arrival of the packets that came in
	// time (the UDP path's slack against the playout clock); MaxLateMS the largest
	// arrival − deadline of the late ones. Both against the deadline the player
	// used (its rebuffering shift when the substream was played).
	MinMarginMS float64 `json:"min_margin_ms"`
	MaxLateMS   float64 `json:"max_late_ms"`
	// With repair: packets NACKed (a packet NACKed again counts again), resends
	// used in time, resends that came after their access unit was played.
	Nacked     int `json:"nacked"`
	Repaired   int `json:"repaired"`
	RepairLate int `json:"repair_late"`
	// ShiftMS is the rebuffering so far when the substream was played.
	ShiftMS float64 `json:"shift_ms"`
	margins int     // packets that set MinMarginMS
}

// keepPlayed is how many played substreams' maps the client keeps so that a
// packet arriving after its substream was played is still placed against its
// deadline.
const keepPlayed = 3

// auBySeq returns the access unit a sequence number belongs to; false if none.
func auBySeq(aus []AU, seq uint16) (AU, bool) {
	i := sort.Search(len(aus), func(i int) bool { return aus[i].FirstSeq > seq }) - 1
	if i < 0 || i >= len(aus) {
		return AU{}, false
	}
	a := aus[i]
	if int(seq) >= int(a.FirstSeq)+int(a.UDPPackets) {
		return AU{}, false
	}
	return a, true
}

// part returns substream k's UDP record, made on first use; c.mu is held. It is
// bounded by the substreams the client keeps (sub's window) and played.
func (c *client) part(k uint32) *UDPPart {
	if c.parts == nil {
		c.parts = map[uint32]*UDPPart{}
	}
	p := c.parts[k]
	if p == nil {
		p = &UDPPart{Substream: k}
		c.parts[k] = p
	}
	return p
}

// auDeadline is when access unit a of a substream played with the given shift is
// due (the player's rule); false before the playout clock starts. c.mu is held.
func (c *client) auDeadline(a AU, shift time.Duration) (time.Time, bool) {
	if c.anchor.IsZero() || c.dts0 < 0 {
		return time.Time{}, false
	}
	return c.anchor.Add(c.opts.PlayoutDelay + ticks90(a.DTS-uint64(c.dts0)) + shift), true
}

// placeUDP records a datagram's arrival against its access unit's deadline;
// late: it came after the access unit was played (a late original counts in
// Late, a late resend in RepairLate). aus is its substream's map (nil: unknown,
// nothing to place it against). c.mu is held.
func (c *client) placeUDP(f Fragment, aus []AU, late bool, now time.Time) {
	p := c.part(f.Substream)
	switch {
	case late && f.Resent:
		p.RepairLate++
	case late:
		p.Late++
	}
	a, ok := auBySeq(aus, f.Seq)
	if !ok {
		return
	}
	shift := c.shift
	if late {
		shift = time.Duration(p.ShiftMS * float64(time.Millisecond))
	}
	due, ok := c.auDeadline(a, shift)
	if !ok {
		return
	}
	if late {
		p.MaxLateMS = max(p.MaxLateMS, ms(now.Sub(due)))
		return
	}
	m := ms(due.Sub(now))
	if p.margins == 0 || m < p.MinMarginMS {
		p.MinMarginMS = m
	}
	p.margins++
}

// udpParts lists the played substreams' records in order; c.mu is held.
func (c *client) udpParts() []UDPPart {
	out := make([]UDPPart, 0, len(c.parts))
	for _, p := range c.parts {
		if p.Packets > 0 || p.Lost > 0 || p.Late > 0 {
			out = append(out, *p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Substream < out[j].Substream })
	return out
}

// keepPlayedAUs keeps substream k's map for late packets and forgets the one
// keepPlayed before it; c.mu is held.
func (c *client) keepPlayedAUs(k uint32, aus []AU) {
	if c.playedAUs == nil {
		c.playedAUs = map[uint32][]AU{}
	}
	c.playedAUs[k] = aus
	if k >= keepPlayed {
		delete(c.playedAUs, k-keepPlayed)
	}
}
