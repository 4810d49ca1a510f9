package fdsp

import (
	"context"
	"sort"
	"time"
)

// The client's side of repair (our fix of the FDSP study's design, where a lost
// UDP packet stays lost): it finds gaps in each substream's RTP sequence
// numbers and calls a packet missing only once reorderPackets packets with
// higher numbers have arrived after the gap showed (and minReorder has passed).
// Counting packets rather than waiting a time is what survives the lab's
// reordering: its "reorder" impairment sends a packet without the delay, so it
// overtakes everything sent in the last one-way delay (125 ms at 250 ms RTT);
// the packets it jumped then arrive in order, each below the next, and none of
// them is called missing. A gap is NACKed only while its access unit's
// deadline leaves time for a resend: now + deadlineRTTs × RTT < deadline (RTT:
// the TCP connection's smoothed RTT from the kernel, refined by resends). A
// NACKed packet whose resend does not come within about an RTT is NACKed again
// while time remains, up to maxNACKTries times.

// RepairStats is the client's JSON "repair" object.
type RepairStats struct {
	Nacked      int   `json:"nacked"`           // distinct packets NACKed at least once
	NACKs       int   `json:"nacks"`            // NACK frames sent
	Renacked    int   `json:"renacked"`         // NACKs of a packet already NACKed (its resend was lost or slow)
	Repaired    int   `json:"repaired"`         // resends that arrived before their access unit was played
	RepairLate  int   `json:"repair_late"`      // resends that arrived after it
	RepairDup   int   `json:"repair_duplicate"` // resends of packets that had arrived after all (reordered, not lost)
	RepairBytes int64 `json:"repair_bytes"`     // bytes of resends received
	// NoTime: packets found missing whose deadline was too close to NACK.
	NoTime int     `json:"no_time"`
	RTTms  float64 `json:"rtt_ms"` // the RTT estimate at the end
}

const (
	minReorder     = 3 * time.Millisecond
	reorderPackets = 3    // later packets that make a gap a loss
	maxNACKTries   = 3    // NACKs of one packet
	maxGaps        = 4096 // missing packets tracked per substream (outside input bounds state)
	// deadlineRTTs: a NACK needs now + deadlineRTTs × RTT before the deadline. A
	// resend takes one RTT and the server's turn; the lab's jitter (20 % of the
	// one-way delay each way) moves it by about ±0.1 RTT, so 1.25 leaves room
	// for it and for the client's tick. At equal added latency with SRT the
	// UDP path's margin at 250 ms RTT is about 1–1.5 RTT (docs/results/
	// fdsp-srt.md, round 5), where a rule of 1.5 would leave many losses unNACKed.
	deadlineRTTs = 1.25
	repairTick   = 5 * time.Millisecond
	tcpRTTEvery  = 50 // ticks between reads of the TCP connection's RTT (250 ms)
)

// gap is one missing packet.
type gap struct {
	seen   time.Time // when a later packet showed it missing
	nacked time.Time // the last NACK; zero: none yet
	tries  int       // NACKs sent; -1: given up (no time)
	later  int       // packets with a higher number that arrived since
}

// gapTracker is one substream's sequence-number state.
type gapTracker struct {
	high int // highest sequence number seen, -1 before any
	gaps map[uint16]*gap
	tail bool // the packets after high were declared missing (a later substream began)
}

// repairer is the client's repair state; the client's mu guards it.
type repairer struct {
	rtt  time.Duration
	subs map[uint32]*gapTracker
	st   RepairStats
}

func newRepairer(rtt time.Duration) *repairer {
	return &repairer{rtt: max(rtt, time.Millisecond), subs: map[uint32]*gapTracker{}}
}

// arrived takes one datagram of substream k; count gives a substream's packet
// count from its header (-1: not known yet).
func (r *repairer) arrived(k uint32, seq uint16, resent bool, now time.Time, count func(uint32) int) {
	t := r.subs[k]
	if t == nil {
		t = &gapTracker{high: -1, gaps: map[uint16]*gap{}}
		r.subs[k] = t
	}
	if g := t.gaps[seq]; g != nil {
		delete(t.gaps, seq)
		if resent && g.tries == 1 { // a resend of a packet NACKed once (Karn): a round trip
			r.rtt = (3*r.rtt + now.Sub(g.nacked)) / 4
		}
	}
	for q, g := range t.gaps {
		if q < seq {
			g.later++
		}
	}
	if int(seq) > t.high {
		for q := t.high + 1; q < int(seq) && len(t.gaps) < maxGaps; q++ {
			t.gaps[uint16(q)] = &gap{seen: now, later: 1} // this packet is the first after it
		}
		t.high = int(seq)
	}
	// A packet of a later substream: the earlier ones' last packets are due.
	for j, e := range r.subs {
		if j < k && !e.tail {
			r.addTail(j, count(j), now)
		}
	}
}

// addTail declares substream k's packets after the highest seen missing, up to
// its count n (n < 0: unknown yet; a later packet tries again).
func (r *repairer) addTail(k uint32, n int, now time.Time) {
	t := r.subs[k]
	if t == nil || t.tail || n < 0 {
		return
	}
	for q := t.high + 1; q < n && len(t.gaps) < maxGaps; q++ {
		t.gaps[uint16(q)] = &gap{seen: now, later: reorderPackets} // the next substream's packets came
	}
	t.high = max(t.high, n-1)
	t.tail = true
}

// due lists the packets of substream k to NACK now; deadline gives a packet's
// access unit's deadline (false: unknown, which leaves time) and played says
// its access unit is already played.
func (r *repairer) due(k uint32, now time.Time, deadline func(seq uint16) (time.Time, bool), played func(seq uint16) bool) []uint16 {
	t := r.subs[k]
	if t == nil {
		return nil
	}
	var out []uint16
	for q, g := range t.gaps {
		if played(q) {
			delete(t.gaps, q)
			continue
		}
		if g.tries < 0 {
			continue
		}
		wait := g.seen.Add(minReorder)
		if g.tries > 0 {
			wait = g.nacked.Add(r.rtt*5/4 + minReorder)
		}
		if now.Before(wait) || g.later < reorderPackets {
			continue
		}
		if g.tries >= maxNACKTries {
			g.tries = -1
			continue
		}
		if d, ok := deadline(q); ok && !now.Add(time.Duration(deadlineRTTs*float64(r.rtt))).Before(d) {
			if g.tries == 0 {
				r.st.NoTime++
			}
			g.tries = -1
			continue
		}
		if g.tries == 0 {
			r.st.Nacked++
		} else {
			r.st.Renacked++
		}
		g.tries++
		g.nacked = now
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// forget drops the state of substreams before k (played).
func (r *repairer) forget(k uint32) {
	for j := range r.subs {
		if j < k {
			delete(r.subs, j)
		}
	}
}

// stats is the JSON object at the end.
func (r *repairer) stats() *RepairStats {
	st := r.st
	st.RTTms = ms(r.rtt)
	return &st
}

// late counts a datagram that came after its access unit was played: an
// original is a late packet (part of Lost), a resend a late repair; c.mu is held.
func (c *client) late(f Fragment) {
	if !f.Resent {
		c.stats.Late++
	} else if c.rep != nil {
		c.rep.st.RepairLate++
	}
}

// udpCount is substream j's UDP packet count from its header, -1 before it
// arrived; c.mu is held.
func (c *client) udpCount(j uint32) int {
	if s := c.subs[j]; s != nil && !s.firstAt.IsZero() {
		return int(s.hdr.UDPPackets)
	}
	return -1
}

// repairLoop NACKs, every repairTick, the missing packets whose reorder window
// has passed and whose deadline still leaves time for a resend.
func (c *client) repairLoop(ctx context.Context) {
	t := time.NewTicker(repairTick)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if i%tcpRTTEvery == 0 {
			c.observeTCPRTT()
		}
		for _, n := range c.nacksDue(time.Now()) {
			c.send(FrameNACK, n.Marshal())
		}
	}
}

// nacksDue is the NACK frames to send now, one or more per substream; it takes c.mu.
func (c *client) nacksDue(now time.Time) []NACK {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []NACK
	for k := range c.rep.subs {
		s := c.subs[k]
		played := func(seq uint16) bool { return s == nil || int(seq) < s.doneSeq }
		deadline := func(seq uint16) (time.Time, bool) {
			if s == nil || !s.complete {
				return time.Time{}, false
			}
			a, ok := auBySeq(s.aus, seq)
			if !ok {
				return time.Time{}, false
			}
			return c.auDeadline(a, c.shift)
		}
		seqs := c.rep.due(k, now, deadline, played)
		if len(seqs) > 0 {
			c.part(k).Nacked += len(seqs)
		}
		items := nackItems(seqs)
		for len(items) > 0 {
			n := min(len(items), MaxNACKItems)
			out = append(out, NACK{SSRC: c.sess.SSRC, Substream: k, Items: items[:n]})
			items = items[n:]
		}
	}
	c.rep.st.NACKs += len(out)
	return out
}

// observeTCPRTT takes the kernel's smoothed RTT of the session's TCP connection
// (TCP_INFO; Linux) as the RTT estimate. Resends refine it between reads, but
// they come only when a NACK seemed in time: an estimate too large (a lost
// handshake segment) would otherwise never be corrected.
func (c *client) observeTCPRTT() {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return
	}
	if tp, ok := readTCPPath(conn); ok && tp.rtt > 0 {
		c.mu.Lock()
		c.rep.rtt = tp.rtt
		c.mu.Unlock()
	}
}
