package fdsp

import (
	"sync"
	"time"
)

// resender keeps a session's recently sent UDP packets and sends one again when
// the client NACKs it (our repair of the UDP path; see nack.go). It holds the
// substream being sent and the one before it — the packets a client can still
// play in time — by reference to the planned datagrams the sender holds anyway,
// so it costs no copies. Resends are bounded by a token bucket of RepairShare
// of the media rate, so a lossy link is not flooded by its own repairs.
type resender struct {
	mu    sync.Mutex
	share float64      // of the media rate
	subs  [2]*sentSub  // the current substream and the one before
	rate  float64      // bytes/s of repair allowed (share × the current substream's media rate)
	level float64      // bytes in the bucket
	last  time.Time    // when level was last filled
	stats repairServer // counters
	now   func() time.Time
}

// sentSub is one substream's datagrams by sequence number, and how many the
// sender has sent so far (a NACK for one not yet sent is not a loss).
type sentSub struct {
	index uint32
	pkts  [][]byte
	sent  int
}

// repairServer counts a session's NACK handling.
type repairServer struct {
	NACKs      int64 // NACK frames taken
	Asked      int64 // packets they named
	Resent     int64 // packets sent again
	Bytes      int64 // bytes sent again
	Ignored    int64 // named a packet unknown, expired, not yet sent, or of another SSRC
	OverBudget int64 // not sent: the repair budget was spent
}

// RepairShare bounds repair traffic to this share of the media rate.
const RepairShare = 0.2

// repairBurst is how many seconds of the repair budget may be spent at once
// (a burst loss in an I-frame): the bucket's depth.
const repairBurst = 1.0

func newResender() *resender {
	return &resender{share: RepairShare, now: time.Now}
}

// begin registers substream j as the one being sent, forgetting the one before
// the previous; its media rate sets the repair budget.
func (r *resender) begin(j *job) {
	s := &sentSub{index: j.hdr.Index}
	media := 0
	for _, a := range j.aus {
		s.pkts = append(s.pkts, a.datagrams...)
		for _, d := range a.datagrams {
			media += len(d)
		}
		for _, n := range a.au.NALs {
			media += len(n.Critical)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs[1], r.subs[0] = r.subs[0], s
	if d := ticks90(uint64(j.hdr.Duration)).Seconds(); d > 0 {
		r.rate = r.share * float64(media) / d
	}
	if r.last.IsZero() {
		r.last, r.level = r.now(), r.rate*repairBurst
	}
}

// sentUpTo records that substream index's first n packets are on their way.
func (r *resender) sentUpTo(index uint32, n int) {
	r.mu.Lock()
	if s := r.subs[0]; s != nil && s.index == index {
		s.sent = n
	}
	r.mu.Unlock()
}

// take returns the datagrams to send again for a NACK, as resends (payload type
// resendPT), each once, within the budget; ssrc is the session's.
func (r *resender) take(n NACK, ssrc uint32) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.NACKs++
	seqs := n.Seqs()
	r.stats.Asked += int64(len(seqs))
	var s *sentSub
	for _, c := range r.subs {
		if c != nil && c.index == n.Substream {
			s = c
		}
	}
	if s == nil || n.SSRC != ssrc {
		r.stats.Ignored += int64(len(seqs))
		return nil
	}
	now := r.now()
	r.level = min(r.rate*repairBurst, r.level+now.Sub(r.last).Seconds()*r.rate)
	r.last = now
	var out [][]byte
	for _, q := range seqs {
		if int(q) >= s.sent {
			r.stats.Ignored++
			continue
		}
		d := s.pkts[q]
		if float64(len(d)) > r.level {
			r.stats.OverBudget++
			continue
		}
		r.level -= float64(len(d))
		re := append([]byte(nil), d...)
		re[1] = re[1]&0x80 | resendPT
		out = append(out, re)
		r.stats.Resent++
		r.stats.Bytes += int64(len(d))
	}
	return out
}

// counters is a copy of the counters.
func (r *resender) counters() repairServer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// repair answers one NACK frame (outside bytes) by sending the packets it names
// again, within the session's budget; what it cannot use is counted.
func (ss *session) repair(p []byte) {
	n, err := ParseNACK(p)
	if err != nil {
		ss.srv.RepairIgnored.Add(1)
		return
	}
	ss.mu.Lock()
	peer := ss.peer
	ss.mu.Unlock()
	before := ss.rs.counters()
	out := ss.rs.take(n, ss.ssrc)
	after := ss.rs.counters()
	ss.srv.RepairIgnored.Add(after.Ignored - before.Ignored)
	ss.srv.RepairOverBudget.Add(after.OverBudget - before.OverBudget)
	if !peer.IsValid() {
		return
	}
	for _, d := range out {
		if _, err := ss.srv.udp.WriteToUDPAddrPort(d, peer); err == nil {
			ss.srv.Resent.Add(1)
			ss.srv.ResentBytes.Add(int64(len(d)))
		}
	}
}
