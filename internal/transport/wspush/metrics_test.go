package wspush

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestMetrics: a VOD session played to its end shows on the handler's collector with
// the same counts as the session's own statistics.
func TestMetrics(t *testing.T) {
	o := newOrigin(t, 0, Options{Lead: time.Minute})
	reg := prometheus.NewRegistry()
	if err := reg.Register(o.handler); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, o.wsURL("/ws/vod/test"), DialOptions{Start: Start{At: AtSeconds(2.5), Policy: PolicyFixed}})
	if err != nil {
		t.Fatal(err)
	}
	if ce, _ := readUntilClose(t, c, 15*time.Second); ce.Code != CloseNormal {
		t.Fatalf("close %v", ce)
	}
	waitFor(t, 5*time.Second, "session stats", func() bool { return len(o.stats()) == 1 })
	st := o.stats()[0]
	waitFor(t, 5*time.Second, "no open session", func() bool { return o.handler.Sessions() == 0 })

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[key] = value(m)
		}
	}
	want := map[string]float64{
		"streambed_ws_messages_total":                  float64(st.Messages),
		"streambed_ws_chunks_total":                    float64(st.Chunks),
		"streambed_ws_payload_bytes_total":             float64(st.PayloadBytes),
		"streambed_ws_overhead_bytes_total":            float64(st.Overhead()),
		"streambed_ws_sessions_ended_total{code=1000}": 1,
		"streambed_ws_sessions{state=streaming}":       0,
		"streambed_ws_sessions{state=waiting}":         0,
		"streambed_ws_switches_total":                  0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if st.Chunks != 6 || st.PayloadBytes == 0 {
		t.Errorf("session stats %+v", st)
	}
}

func value(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}
