package publish

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/streambed/streambed/internal/media"
)

func TestDurationForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{`"30s"`, 30 * time.Second}, {`30`, 30 * time.Second}, {`"30"`, 30 * time.Second},
		{`2.5`, 2500 * time.Millisecond}, {`"24h"`, 24 * time.Hour}, {`"10m"`, 10 * time.Minute},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || time.Duration(d) != tc.want {
			t.Errorf("JSON %s = %v, %v; want %v", tc.in, d, err, tc.want)
		}
		var y struct{ D Duration }
		if err := yaml.Unmarshal([]byte("d: "+tc.in), &y); err != nil || time.Duration(y.D) != tc.want {
			t.Errorf("YAML %s = %v, %v; want %v", tc.in, y.D, err, tc.want)
		}
	}
	for _, bad := range []string{`"soon"`, `-3`, `true`, `"1e30"`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("JSON %s accepted as %v", bad, d)
		}
	}
	b, _ := json.Marshal(Duration(90 * time.Second))
	if string(b) != `"1m30s"` {
		t.Errorf("marshal = %s", b)
	}
}

// The load tests' three use cases, by name, and values over a preset.
func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		preset              string
		archive, group, dvr time.Duration
	}{
		{"pure-live", 120 * time.Second, 60 * time.Second, 30 * time.Second},
		{"archive", 24 * time.Hour, 10 * time.Minute, 30 * time.Second},
		{"archive-dvr", 24 * time.Hour, 10 * time.Minute, time.Hour},
	} {
		o, err := Resolve(tc.preset, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.preset, err)
		}
		if !o.Archiving || time.Duration(o.ArchiveLength) != tc.archive || time.Duration(o.ArchiveSegmentLength) != tc.group || time.Duration(o.DVRWindowLength) != tc.dvr {
			t.Errorf("%s = %+v", tc.preset, o)
		}
		if o.SegmentAddressing != AddressTime || o.HLSFMP4 == nil || !*o.HLSFMP4 || o.SegmentDuration != Duration(2*time.Second) {
			t.Errorf("%s: defaults not applied: %+v", tc.preset, o)
		}
	}
	o, err := Resolve("pure-live", Options{DVRWindowLength: Duration(60 * time.Second), SegmentAddressing: AddressNumber})
	if err != nil || o.DVRWindowLength != Duration(60*time.Second) || o.ArchiveLength != Duration(120*time.Second) || o.SegmentAddressing != AddressNumber {
		t.Errorf("override = %+v, %v", o, err)
	}
	o, err = Resolve("", Options{})
	if err != nil || o.Archiving || o.DVRWindowLength != Defaults.DVRWindowLength {
		t.Errorf("no preset = %+v, %v", o, err)
	}
}

func TestOptionsRefused(t *testing.T) {
	no := false
	for name, tc := range map[string]struct {
		preset string
		o      Options
	}{
		"unknown preset":        {"pure-dead", Options{}},
		"TS HLS":                {"", Options{HLSFMP4: &no}},
		"addressing":            {"", Options{SegmentAddressing: "index"}},
		"DVR under a segment":   {"", Options{DVRWindowLength: Duration(time.Second)}},
		"archive under the DVR": {"archive-dvr", Options{ArchiveLength: Duration(time.Minute)}},
		"group over archive":    {"pure-live", Options{ArchiveSegmentLength: Duration(time.Hour)}},
		"length w/o archiving":  {"", Options{ArchiveLength: Duration(time.Hour)}},
		"tiny segments":         {"", Options{SegmentDuration: Duration(time.Millisecond)}},
	} {
		if _, err := Resolve(tc.preset, tc.o); !errors.Is(err, media.ErrBadRequest) {
			t.Errorf("%s: err = %v, want a bad request", name, err)
		}
	}
}
