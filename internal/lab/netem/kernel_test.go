package netem

import (
	"strings"
	"testing"
	"time"
)

// The tc command lines the kernel backend renders. (This machine's kernel has no
// netem, so the netem lines are checked as text here and on a netem kernel by the
// calibration tests with Backend: kernel.)
func TestNetemArgs(t *testing.T) {
	lossBad := Percent(80)
	cases := []struct {
		m    Impairment
		want string
	}{
		{Impairment{}, ""},
		{Impairment{Delay: ms(25)}, "limit 100000 delay 25000us"},
		{Impairment{Delay: ms(25), Jitter: ms(5), JitterReorders: true, Distribution: "normal"},
			"limit 100000 delay 25000us 5000us distribution normal"},
		{Impairment{Delay: ms(25), Jitter: ms(5)}, "limit 100000 delay 25000us 5000us rate 100gbit"},
		{Impairment{Loss: Bernoulli(0.2), Duplicate: 0.2, Corrupt: 0.2, Reorder: 0.2, Delay: ms(50)},
			"limit 100000 delay 50000us loss random 0.2% duplicate 0.2% corrupt 0.2% reorder 0.2%"},
		{Impairment{Loss: Loss{Model: "gilbert-elliott", P: 1, R: 25, LossBad: &lossBad, LossGood: 0.1}},
			"limit 100000 loss gemodel 1% 25% 80% 0.1%"},
	}
	for _, c := range cases {
		if got := strings.Join(netemArgs(c.m), " "); got != c.want {
			t.Errorf("netem %s:\n got %q\nwant %q", c.m, got, c.want)
		}
	}
}

func TestTbfArgs(t *testing.T) {
	cases := []struct {
		m    Impairment
		want string
	}{
		{Impairment{}, "tbf rate 10000000bit burst 5000 limit 1519000"},
		{Impairment{Burst: 4096, Queue: Queue{Latency: Duration(400 * time.Millisecond)}}, "tbf rate 10000000bit burst 5000 latency 400000us"},
		{Impairment{Burst: 64 << 10, Queue: Queue{Bytes: 30000}}, "tbf rate 10000000bit burst 65536 limit 95536"},
		{Impairment{Queue: Queue{Packets: 50}}, "tbf rate 10000000bit burst 5000 limit 80700"},
	}
	for _, c := range cases {
		if got := strings.Join(tbfArgs(10*Mbit, c.m), " "); got != c.want {
			t.Errorf("tbf %s:\n got %q\nwant %q", c.m, got, c.want)
		}
	}
	if got := strings.Join(tbfArgs(Mbit, Impairment{}), " "); !strings.Contains(got, "burst 3028") {
		t.Errorf("a slow tbf needs a burst of two frames: %q", got)
	}
}

func TestKernelWithoutNetem(t *testing.T) {
	if err := kernelWithoutNetem(Impairment{Rate: ConstantRate(Mbit), Loss: Bernoulli(1)}); err != nil {
		t.Errorf("rate and loss need no netem: %v", err)
	}
	err := kernelWithoutNetem(Impairment{Delay: ms(5), Duplicate: 1})
	if err == nil || !strings.Contains(err.Error(), "delay") || !strings.Contains(err.Error(), "--backend userspace") {
		t.Errorf("want an error naming delay and the way out, got %v", err)
	}
}
