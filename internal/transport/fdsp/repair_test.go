package fdsp

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestNACKWire(t *testing.T) {
	n := NACK{SSRC: 0xfeed, Substream: 3, Items: []NACKItem{{PID: 5, BLP: 0b101}, {PID: 65534, BLP: 0xffff}}}
	got, err := ParseNACK(n.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if got.SSRC != n.SSRC || got.Substream != 3 || !slices.Equal(got.Items, n.Items) {
		t.Fatalf("round trip: %+v, want %+v", got, n)
	}
	// 5, 6 (bit 0), 8 (bit 2); 65534, 65535 (bit 0) and nothing past 65535.
	if want := []uint16{5, 6, 8, 65534, 65535}; !slices.Equal(got.Seqs(), want) {
		t.Fatalf("seqs %v, want %v", got.Seqs(), want)
	}
	seqs := []uint16{0, 1, 16, 17, 40, 1000}
	items := nackItems(seqs)
	if !slices.Equal(NACK{Items: items}.Seqs(), seqs) {
		t.Fatalf("nackItems(%v) = %v names %v", seqs, items, NACK{Items: items}.Seqs())
	}
	if len(items) != 4 { // 0 covers 1 and 16 (PID+16 at most); 17; 40; 1000
		t.Fatalf("nackItems(%v) = %v, want 4 items", seqs, items)
	}
	many := NACK{Items: make([]NACKItem, MaxNACKItems+1)}
	for name, p := range map[string][]byte{
		"empty":          nil,
		"no items":       NACK{SSRC: 1}.Marshal(),
		"too many items": many.Marshal(),
		"truncated item": n.Marshal()[:len(n.Marshal())-1],
		"trailing bytes": append(n.Marshal(), 0),
		"count past end": {0, 0, 0, 1, 0, 0, 0, 0, 3, 0, 1, 0, 0},
	} {
		if _, err := ParseNACK(p); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err %v, want ErrFormat", name, err)
		}
	}
}

// seqDeadline is a deadline far away for every packet.
func noDeadline(uint16) (time.Time, bool) { return time.Time{}, false }
func notPlayed(uint16) bool               { return false }
func count(n int) func(uint32) int        { return func(uint32) int { return n } }

func TestGapDetectionUnderReorderingAndDuplication(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := newRepairer(40 * time.Millisecond)
	// 0 1 3 2 4 4 6 7 8: 2 is reordered, 4 duplicated, 5 lost.
	for i, s := range []uint16{0, 1, 3, 2, 4, 4, 6, 7, 8} {
		r.arrived(0, s, false, at(i), count(-1))
	}
	r2 := newRepairer(40 * time.Millisecond) // the same with only 6 and 7 after 5
	for i, s := range []uint16{0, 1, 3, 2, 4, 4, 6, 7} {
		r2.arrived(0, s, false, at(i), count(-1))
	}
	if d := r2.due(0, at(100), noDeadline, notPlayed); len(d) != 0 {
		t.Fatalf("NACKed %v with only two packets after the gap", d)
	}
	if d := r.due(0, at(8), noDeadline, notPlayed); len(d) != 0 { // 5 missing since 6 ms
		t.Fatalf("NACKed %v before minReorder passed", d)
	}
	if d := r.due(0, at(6).Add(minReorder), noDeadline, notPlayed); !slices.Equal(d, []uint16{5}) {
		t.Fatalf("NACKed %v, want [5]: 2 was reordered, 4 duplicated, 5 lost", d)
	}
	if r.st.Nacked != 1 {
		t.Fatalf("nacked %d, want 1", r.st.Nacked)
	}
	r.arrived(0, 5, true, at(60), count(-1)) // its resend
	// The lab's reorder: 40 overtakes 9..39 by the one-way delay; they then come
	// in order, except 25, which the link lost.
	r.arrived(0, 40, false, at(100), count(-1))
	for q := uint16(9); q < 40; q++ {
		if q == 25 {
			continue
		}
		r.arrived(0, q, false, at(100+int(q)), count(-1))
		if d := r.due(0, at(100+int(q)).Add(time.Second), noDeadline, notPlayed); len(d) != 0 && (q < 27 || !slices.Equal(d, []uint16{25})) {
			t.Fatalf("after %d: NACKed %v; want nothing for the overtaken packets, and 25 once three later ones came", q, d)
		}
	}
	if r.st.Nacked != 2 || len(r.subs[0].gaps) != 1 {
		t.Fatalf("nacked %d, %d gaps left: want 5 and 25 NACKed, 25 still open", r.st.Nacked, len(r.subs[0].gaps))
	}
}

func TestNoNACKWhenTheDeadlineLeavesNoTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rtt := 100 * time.Millisecond
	r := newRepairer(rtt)
	for _, q := range []uint16{0, 3, 4, 5} { // 1 and 2 missing
		r.arrived(0, q, false, t0, count(-1))
	}
	now := t0.Add(time.Second)
	deadline := func(seq uint16) (time.Time, bool) {
		if seq == 1 {
			return now.Add(rtt), true // a resend would come after it: 1.5 × RTT needed
		}
		return now.Add(2 * rtt), true
	}
	if d := r.due(0, now, deadline, notPlayed); !slices.Equal(d, []uint16{2}) {
		t.Fatalf("NACKed %v, want only [2]", d)
	}
	if r.st.NoTime != 1 {
		t.Fatalf("no_time %d, want 1", r.st.NoTime)
	}
	if d := r.due(0, now.Add(time.Second), deadline, notPlayed); len(d) != 0 {
		t.Fatalf("NACKed %v again: 1 was given up and 2's retry has no time left", d)
	}
	// A played access unit's packets are forgotten, never NACKed.
	r.arrived(0, 8, false, now, count(-1))
	if d := r.due(0, now.Add(time.Second), noDeadline, func(uint16) bool { return true }); len(d) != 0 || len(r.subs[0].gaps) != 0 {
		t.Fatalf("NACKed %v for played packets; %d gaps left", d, len(r.subs[0].gaps))
	}
}

func TestRepeatedNACKAndTail(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rtt := 20 * time.Millisecond
	r := newRepairer(rtt)
	for _, q := range []uint16{0, 2, 3, 4} {
		r.arrived(0, q, false, t0, count(-1))
	}
	now := t0.Add(10 * time.Millisecond)
	var nacks int
	for i := 0; i < 20; i++ { // the resends never come
		nacks += len(r.due(0, now.Add(time.Duration(i)*10*time.Millisecond), noDeadline, notPlayed))
	}
	if nacks != maxNACKTries || r.st.Nacked != 1 || r.st.Renacked != maxNACKTries-1 {
		t.Fatalf("%d NACKs (nacked %d, renacked %d), want %d of one packet", nacks, r.st.Nacked, r.st.Renacked, maxNACKTries)
	}
	// The first resend arriving ends the retries and is a round trip sample.
	r = newRepairer(rtt)
	for _, q := range []uint16{0, 2, 3, 4} {
		r.arrived(0, q, false, t0, count(-1))
	}
	r.due(0, now, noDeadline, notPlayed)
	r.arrived(0, 1, true, now.Add(60*time.Millisecond), count(-1))
	if r.rtt != (3*rtt+60*time.Millisecond)/4 {
		t.Fatalf("rtt %v after a 60 ms repair, want %v", r.rtt, (3*rtt+60*time.Millisecond)/4)
	}
	if d := r.due(0, now.Add(time.Second), noDeadline, notPlayed); len(d) != 0 {
		t.Fatalf("NACKed %v after the repair arrived", d)
	}
	// Substream 0 has 8 packets; the first of substream 1 shows 5, 6, 7 missing.
	r.arrived(1, 0, false, now, count(8))
	if d := r.due(0, now.Add(time.Second), noDeadline, notPlayed); !slices.Equal(d, []uint16{5, 6, 7}) {
		t.Fatalf("tail NACK %v, want [5 6 7]", d)
	}
}

// testJob is a substream of n datagrams of size bytes each over dur.
func testJob(index uint32, n, size int, dur time.Duration) *job {
	j := &job{hdr: Substream{Index: index, Duration: uint32(dur.Seconds() * 90000)}}
	var a plannedAU
	for i := 0; i < n; i++ {
		d := AppendRTP(nil, Fragment{Seq: uint16(i), SSRC: 7, Substream: index}, bytes.Repeat([]byte{0x41}, size), 0, size)
		a.datagrams = append(a.datagrams, d)
	}
	j.aus = []plannedAU{a}
	return j
}

func TestResenderSendsWhatWasAskedWithinItsBudget(t *testing.T) {
	clock := time.Unix(1000, 0)
	r := newResender()
	r.now = func() time.Time { return clock }
	// 100 packets of about 1 kB over 1 s: 100 kB/s of media, 20 kB/s of repair,
	// a bucket of 20 kB.
	r.begin(testJob(0, 100, 1000, time.Second))
	r.sentUpTo(0, 50)
	out := r.take(NACK{SSRC: 7, Substream: 0, Items: nackItems([]uint16{3, 4, 60})}, 7)
	if len(out) != 2 {
		t.Fatalf("%d resends, want 2 (60 is not sent yet)", len(out))
	}
	for i, seq := range []uint16{3, 4} {
		f, err := ParseRTP(out[i])
		if err != nil || f.Seq != seq || !f.Resent {
			t.Fatalf("resend %d: %+v %v, want seq %d marked as a resend", i, f, err, seq)
		}
		orig := r.subs[0].pkts[seq]
		if !bytes.Equal(out[i][2:], orig[2:]) || orig[1]&0x7f != payloadType {
			t.Fatalf("resend %d differs from the original beyond its payload type (or the original was changed)", i)
		}
	}
	for name, n := range map[string]NACK{
		"another SSRC":      {SSRC: 8, Substream: 0, Items: []NACKItem{{PID: 1}}},
		"unknown substream": {SSRC: 7, Substream: 5, Items: []NACKItem{{PID: 1}}},
		"past the end":      {SSRC: 7, Substream: 0, Items: []NACKItem{{PID: 65000}}},
	} {
		if out := r.take(n, 7); len(out) != 0 {
			t.Errorf("%s: %d resends, want none", name, len(out))
		}
	}
	if c := r.counters(); c.Ignored != 4 || c.Resent != 2 {
		t.Fatalf("counters %+v: want 4 ignored (60, SSRC, substream, past the end), 2 resent", c)
	}
	// Two substreams later substream 0 has expired.
	r.begin(testJob(1, 100, 1000, time.Second))
	r.sentUpTo(1, 100)
	if out := r.take(NACK{SSRC: 7, Substream: 0, Items: []NACKItem{{PID: 1}}}, 7); len(out) != 1 {
		t.Fatalf("the previous substream: %d resends, want 1", len(out))
	}
	r.begin(testJob(2, 100, 1000, time.Second))
	if out := r.take(NACK{SSRC: 7, Substream: 0, Items: []NACKItem{{PID: 1}}}, 7); len(out) != 0 {
		t.Fatalf("an expired substream: %d resends, want none", len(out))
	}
	// A flood of NACKs in one instant gets the bucket and no more; time refills it.
	r.sentUpTo(2, 100)
	clock = clock.Add(time.Second) // the bucket is full again
	flood := func() (sent int) {
		for i := 0; i < 50; i++ {
			for _, d := range r.take(NACK{SSRC: 7, Substream: 2, Items: nackItems([]uint16{uint16(i), uint16(i + 50)})}, 7) {
				sent += len(d)
			}
		}
		return sent
	}
	bucket := RepairShare * repairBurst * float64(100*len(r.subs[0].pkts[0])) / 1.0
	if sent := flood(); float64(sent) > bucket || float64(sent) < bucket-float64(len(r.subs[0].pkts[0])) {
		t.Fatalf("a flood got %d bytes resent, want the bucket (%.0f)", sent, bucket)
	}
	if c := r.counters(); c.OverBudget == 0 {
		t.Fatalf("counters %+v: a flood past the budget counted nothing over budget", c)
	}
	clock = clock.Add(500 * time.Millisecond) // half a second of 20 % of the media rate
	if sent := flood(); float64(sent) > bucket/2+1 || float64(sent) < bucket/2-float64(len(r.subs[0].pkts[0])) {
		t.Fatalf("after 0.5 s the flood got %d bytes, want about %.0f", sent, bucket/2)
	}
}

// A NACK frame that does not parse is counted and sends nothing.
func TestSessionRepairIgnoresMalformedNACKs(t *testing.T) {
	s := &Server{}
	ss := &session{srv: s, ssrc: 7, rs: newResender()}
	ss.rs.begin(testJob(0, 10, 100, time.Second))
	ss.rs.sentUpTo(0, 10)
	for _, p := range [][]byte{nil, {1, 2, 3}, NACK{SSRC: 7}.Marshal()} {
		ss.repair(p)
	}
	ss.repair(NACK{SSRC: 9, Substream: 0, Items: []NACKItem{{PID: 1, BLP: 1}}}.Marshal()) // another session's SSRC
	if s.RepairIgnored.Load() != 5 || s.Resent.Load() != 0 {
		t.Fatalf("ignored %d, resent %d: want 3 malformed frames and 2 foreign packets ignored, nothing resent", s.RepairIgnored.Load(), s.Resent.Load())
	}
}

func TestAdaptiveBPWithRepairStartsAtZeroAndStillClimbs(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want int
	}{{1_000_000, 100}, {350_000, 75}, {250_000, 50}, {150_000, 25}, {40_000, 0}} {
		var a adaptiveBP
		a.init(BPAuto, true)
		// With repair the client's Reports say the path lost 4 packets, all repaired.
		var plans []int
		for k := 0; k < 14; k++ {
			if k >= 2 {
				p := plans[k-2]
				d := time.Duration(float64(content(p)) / tc.rate * float64(time.Second))
				r := TCPReport{Substream: uint32(k - 2), TCPms: uint32(d.Milliseconds())}
				if k > 2 {
					r.SlackMS, r.SlackKnown = int32((window - d).Milliseconds()), true
				}
				a.tcpReport(r)
			}
			if k >= 3 {
				a.report(Report{Substream: uint32(k - 3), Expected: 1000, Repaired: 4})
			}
			plans = append(plans, a.plan(uint32(k), subDur, content))
		}
		if plans[0] != bpStartRepair || plans[1] != bpStartRepair {
			t.Errorf("%.0f B/s: plans %v, want the first two at the start-up value %d", tc.rate, plans, bpStartRepair)
		}
		for _, b := range plans[len(plans)-4:] {
			if b != tc.want {
				t.Errorf("%.0f B/s: plans %v, want the last four at %d (the no-repair controller's answer)", tc.rate, plans, tc.want)
				break
			}
		}
	}
}
