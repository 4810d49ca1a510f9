package pars

import (
	"testing"
	"time"
)

// TestMeterSteady: two connections, RTT 10 ms, each receiving 1 kB per ms after its
// first byte; the first finishes at 200 ms, the second at 300 ms. Each is measured
// from 4 RTTs after its own first byte to its own end, and the rates add up.
func TestMeterSteady(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(v int) time.Time { return t0.Add(time.Duration(v) * time.Millisecond) }
	m := newMeter(2)
	m.sent(0, ms(0))
	m.sent(1, ms(0))
	for i := 10; i <= 300; i++ { // lane 0 from 10 ms, lane 1 from 20 ms
		if i <= 200 {
			m.add(0, 1000, ms(i))
		}
		if i >= 20 {
			m.add(1, 1000, ms(i))
		}
	}
	m.done(0, ms(200))
	m.done(1, ms(300))
	b, d, ok := m.steady(4, 4)
	if !ok {
		t.Fatal("no steady window")
	}
	// Windows 50..200 and 60..300 ms at 1 kB/ms each: 2 kB/ms together.
	rate := float64(b) / float64(d.Milliseconds())
	if d != 195*time.Millisecond || rate < 1990 || rate > 2010 {
		t.Fatalf("steady = %d bytes in %v (%.0f B/ms), want 2000 B/ms over the mean window 195ms", b, d, rate)
	}
	if fb := m.firstByte(); !fb.Equal(ms(10)) {
		t.Fatalf("first byte %v", fb.Sub(t0))
	}
	// Too short: with 4 RTTs skipped only 20 ms of a 100 ms transfer would remain.
	short := newMeter(1)
	short.sent(0, ms(0))
	for i := 10; i <= 80; i++ {
		short.add(0, 1000, ms(i))
	}
	short.done(0, ms(80))
	if _, _, ok := short.steady(4, 4); ok {
		t.Fatal("a transfer shorter than 8 round trips gave a steady sample")
	}
	// A lane that never received a byte gives no sample.
	none := newMeter(2)
	none.sent(0, ms(0))
	none.add(0, 1000, ms(10))
	none.done(0, ms(500))
	if _, _, ok := none.steady(1, 1); ok {
		t.Fatal("sample with a silent lane")
	}
}
