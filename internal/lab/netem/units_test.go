package netem

import (
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	cases := []struct {
		in   string
		want Rate
		err  bool
	}{
		{"2mbit", 2e6, false},
		{"10Mbit/s", 10e6, false},
		{"2.5 Mbps", 2.5e6, false},
		{"500kbit", 500e3, false},
		{"500kbps", 500e3, false},
		{"1gbit", 1e9, false},
		{"1Gbit/s", 1e9, false},
		{"1500000", 1.5e6, false},
		{"100bit", 100, false},
		{"1MB/s", 8e6, false},
		{"2MBps", 16e6, false},
		{"1mbyte/s", 8e6, false},
		{"10Mb/s", 10e6, false},
		{"", 0, false},
		{"unlimited", 0, false},
		{"fast", 0, true},
		{"10 furlongs", 0, true},
		{"-1mbit", 0, true},
	}
	for _, c := range cases {
		got, err := ParseRate(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, err %v", c.in, float64(got), err, float64(c.want), c.err)
		}
	}
}

func TestRateString(t *testing.T) {
	for _, r := range []Rate{2 * Mbit, 1.5 * Mbit, 500 * Kbit, Gbit, 100} {
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Errorf("%v → %q → %v, %v", float64(r), r.String(), float64(back), err)
		}
	}
}

func TestParseSizePercentDurationQueue(t *testing.T) {
	sizes := map[string]Size{"1500": 1500, "64kb": 65536, "32KiB": 32768, "1mb": 1 << 20, "256kbit": 32768, "10k": 10240}
	for in, want := range sizes {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	pcts := map[string]Percent{"1": 1, "1%": 1, "0.2 %": 0.2, "100": 100}
	for in, want := range pcts {
		if got, err := ParsePercent(in); err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"101", "-1", "x%"} {
		if _, err := ParsePercent(bad); err == nil {
			t.Errorf("ParsePercent(%q) accepted", bad)
		}
	}
	durs := map[string]time.Duration{"25ms": 25 * time.Millisecond, "1.5s": 1500 * time.Millisecond, "25": 25 * time.Millisecond, "200us": 200 * time.Microsecond}
	for in, want := range durs {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	queues := map[string]Queue{
		"100": {Packets: 100}, "100p": {Packets: 100}, "50 packets": {Packets: 50},
		"64kb": {Bytes: 65536}, "3000bytes": {Bytes: 3000}, "50ms": {Latency: Duration(50 * time.Millisecond)},
	}
	for in, want := range queues {
		if got, err := ParseQueue(in); err != nil || got != want {
			t.Errorf("ParseQueue(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
}

func TestParseTrace(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader("# 12 packets per 4 ms\n1\n1\n2\n2\n3\n3\n4\n4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Period != 4 || len(tr.Millis) != 8 {
		t.Fatalf("period %d, %d entries", tr.Period, len(tr.Millis))
	}
	if got := tr.Mean(); got != 24*Mbit {
		t.Errorf("mean %v, want 24mbit", got)
	}
	for _, bad := range []string{"", "2\n1\n", "x\n", "0\n"} {
		if _, err := ParseTrace(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseTrace(%q) accepted", bad)
		}
	}
	c := ConstantTrace(12*Mbit, 1000)
	if m := c.Mean(); m < 11.9*Mbit || m > 12.1*Mbit {
		t.Errorf("constant trace mean %v", m)
	}
}
