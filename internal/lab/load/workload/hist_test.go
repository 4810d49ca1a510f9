package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// TestHistPrecision: every quantile is within 0.4% of the exact one (exact below
// 256 µs), over values from microseconds to minutes.
func TestHistPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewHist()
	var vals []int64
	for range 20000 {
		v := int64(math.Exp(rng.Float64() * math.Log(1e8))) // 1 µs .. 100 s, log-uniform
		vals = append(vals, v)
		h.Record(time.Duration(v) * time.Microsecond)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.Quantile(q).Microseconds()
		if d := math.Abs(float64(got - exact)); d > float64(exact)/256+0.5 {
			t.Errorf("q%g: %d µs, exact %d µs", q, got, exact)
		}
	}
	if h.Count() != 20000 || h.Max().Microseconds() != vals[len(vals)-1] {
		t.Errorf("count %d max %v", h.Count(), h.Max())
	}
}

// TestHistMergeExact: merging histograms equals recording everything into one.
func TestHistMergeExact(t *testing.T) {
	a, b, all := NewHist(), NewHist(), NewHist()
	for i := range 5000 {
		d := time.Duration(i*i) * time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	ja, _ := json.Marshal(a)
	jall, _ := json.Marshal(all)
	if string(ja) != string(jall) {
		t.Error("merged histogram differs from the one that recorded everything")
	}
	var back Hist
	if err := json.Unmarshal(ja, &back); err != nil {
		t.Fatal(err)
	}
	for _, q := range Quantiles {
		if back.Quantile(q) != all.Quantile(q) {
			t.Errorf("q%g after a JSON round trip: %v, want %v", q, back.Quantile(q), all.Quantile(q))
		}
	}
}

func TestHistRejectsBadFiles(t *testing.T) {
	for _, s := range []string{
		`{"buckets":[[1,2]],"count":3}`,
		`{"buckets":[[99999999,1]],"count":1}`,
		`{"buckets":"x"}`,
	} {
		var h Hist
		if err := json.Unmarshal([]byte(s), &h); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

// FuzzHistJSON: report files come from other hosts; any bytes either fail to load or
// give a histogram whose quantiles can be read.
func FuzzHistJSON(f *testing.F) {
	f.Add([]byte(`{"buckets":[[3,1],[400,2]],"count":3,"sum_us":900,"min_us":3,"max_us":600}`))
	f.Add([]byte(`{"buckets":[],"count":0}`))
	f.Add([]byte(`{"buckets":[[0,18446744073709551615],[1,1]],"count":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Hist
		if err := json.Unmarshal(b, &h); err != nil {
			return
		}
		for _, q := range Quantiles {
			_ = h.Quantile(q)
		}
		h.Merge(&h)
		_ = h.Mean()
	})
}

// FuzzParseReport: a report file from another host either fails to parse or merges
// and renders.
func FuzzParseReport(f *testing.F) {
	rec := NewRecorder(time.Unix(0, 0), time.Second, Settings{Host: "h", Mode: ModeDASH}, "http://h/m.mpd")
	rec.Request(KindVideo, time.Unix(0, 0), time.Unix(0, 3e6), "", 1000)
	rec.Request(KindManifest, time.Unix(1, 0), time.Unix(1, 1e6), "404", 10)
	good, _ := json.Marshal(rec.Finish(time.Unix(2, 0)))
	f.Add(good)
	f.Add([]byte(`{"version":1,"interval_s":1,"kinds":{}}`))
	f.Add([]byte(`{"version":1,"interval_s":1e-300,"kinds":{"manifest":{"latency_us":{"buckets":[],"count":0}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			return
		}
		m, err := Merge(r, r)
		if err != nil {
			return
		}
		_ = m.Totals()
		if _, err := m.HTML(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPickAudio: the 128 kbit/s track (as declared, within 15%), else the highest.
func TestPickAudio(t *testing.T) {
	m := func(bws ...int) *player.Manifest {
		set := &player.AdaptationSet{Kind: media.Audio}
		for _, bw := range bws {
			set.Representations = append(set.Representations, &player.Representation{ID: fmt.Sprint(bw), Bandwidth: bw})
		}
		return &player.Manifest{Sets: []*player.AdaptationSet{set}}
	}
	for _, c := range []struct {
		bws  []int
		want string
	}{
		{[]int{64000, 133377, 256000}, "133377"},
		{[]int{64000, 128000, 140000}, "128000"},
		{[]int{32000, 64000}, "64000"},
		{[]int{96000, 192000}, "192000"},
	} {
		if got := pickAudio(m(c.bws...), ""); got == nil || got.ID != c.want {
			t.Errorf("%v: %v, want %s", c.bws, got, c.want)
		}
	}
	if got := pickAudio(m(64000, 128000), "64000"); got.ID != "64000" {
		t.Errorf("--audio 64000: %s", got.ID)
	}
	if pickAudio(&player.Manifest{}, "") != nil {
		t.Error("an audio track from a manifest without audio")
	}
}

// TestHistStdDev: the standard deviation from the buckets is within 1% of the exact
// one for values spread over several powers of two, and 0 for a constant.
func TestHistStdDev(t *testing.T) {
	h := NewHist()
	var sum, sq float64
	var vals []float64
	for i := 1; i <= 5000; i++ {
		v := float64(100 + (i*7919)%20000) // 0.1–20 ms in µs
		vals = append(vals, v)
		sum += v
		h.Record(time.Duration(v) * time.Microsecond)
	}
	mean := sum / float64(len(vals))
	for _, v := range vals {
		sq += (v - mean) * (v - mean)
	}
	want := math.Sqrt(sq / float64(len(vals)))
	got := float64(h.StdDev().Microseconds())
	if math.Abs(got-want) > 0.01*want {
		t.Errorf("stddev %.0f µs, want %.0f µs ± 1%%", got, want)
	}
	c := NewHist()
	for range 10 {
		c.Record(3 * time.Millisecond)
	}
	if c.StdDev() != 0 {
		t.Errorf("constant values: stddev %v, want 0", c.StdDev())
	}
}
