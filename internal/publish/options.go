// Package publish keeps an origin's publishing points: the live channels that
// encoders feed (DASH-IF ingest), created from the configuration or through the
// authenticated JSON API /api/channels, with the options of Unified Origin's live
// load tests (archive, DVR window, reconnect, addressing) and their three published
// use cases as presets. Channels made through the API are kept in the data folder
// and come back, with the same ingest tokens, when the origin restarts.
// docs/protocols/channels.md is the user's description.
package publish

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/streambed/streambed/internal/media"
)

// Duration is a time.Duration written as a Go duration ("30s", "24h") or as plain
// seconds (30, "30"), in JSON and YAML alike; it is written back as a Go duration.
type Duration time.Duration

// ParseDuration reads "30s", "1h30m", "30" or "2.5" (seconds).
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > float64(1<<62)/1e9 {
			return 0, fmt.Errorf("duration %q is out of range", s)
		}
		return Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: write it as 30s, 10m, 24h or plain seconds", s)
	}
	return Duration(d), nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "30s" or 30.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := string(b)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML writes "30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads 30s or 30.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Addressing is how the channel's main DASH manifest names segments.
const (
	AddressTime   = "time"   // SegmentTimeline with $Time$ (the load tests' choice)
	AddressNumber = "number" // $Number$
)

// Options are a publishing point's settings, named as in Unified Origin's live load
// tests. A zero field takes its preset's value, then the default.
type Options struct {
	// Archiving keeps every segment on disk (data_dir/archive/NAME unless
	// ArchiveDir says where), grouped in ArchiveSegmentLength folders and pruned
	// after ArchiveLength.
	Archiving            bool     `json:"archiving" yaml:"archiving"`
	ArchiveDir           string   `json:"archive_dir,omitempty" yaml:"archive_dir"`
	ArchiveLength        Duration `json:"archive_length" yaml:"archive_length"`
	ArchiveSegmentLength Duration `json:"archive_segment_length" yaml:"archive_segment_length"`
	// DVRWindowLength is the time-shift buffer players may seek in
	// (MPD@timeShiftBufferDepth, the HLS playlist's length).
	DVRWindowLength Duration `json:"dvr_window_length" yaml:"dvr_window_length"`
	// RestartOnEncoderReconnect continues the timeline when an encoder reconnects.
	RestartOnEncoderReconnect bool `json:"restart_on_encoder_reconnect" yaml:"restart_on_encoder_reconnect"`
	// SegmentAddressing picks the channel's main DASH manifest: "time"
	// (manifest-timeline.mpd, SegmentTimeline) or "number" (manifest.mpd). Both
	// are served either way.
	SegmentAddressing string `json:"segment_addressing" yaml:"segment_addressing"`
	// SegmentDuration is the encoder's segment (GOP) duration, which numbers
	// segments and which $Number$ manifests announce.
	SegmentDuration            Duration `json:"segment_duration" yaml:"segment_duration"`
	MinBufferTime              Duration `json:"min_buffer_time" yaml:"min_buffer_time"`
	SuggestedPresentationDelay Duration `json:"suggested_presentation_delay" yaml:"suggested_presentation_delay"`
	// HLSFMP4 is HLS with fMP4 (CMAF) segments, the only HLS Streambed makes: false
	// is refused rather than silently ignored.
	HLSFMP4 *bool `json:"hls_fmp4,omitempty" yaml:"hls_fmp4"`
}

// Defaults fill what neither the options nor a preset set.
var Defaults = Options{
	HLSFMP4:           &fmp4,
	DVRWindowLength:   Duration(60 * time.Second),
	SegmentAddressing: AddressTime,
	SegmentDuration:   Duration(2 * time.Second),
}

var fmp4 = true

// Presets are the load tests' three use cases.
var Presets = map[string]Options{
	// pure live: 120 s of archive in 60 s archive segments, 30 s DVR window
	"pure-live": {Archiving: true, ArchiveLength: Duration(120 * time.Second), ArchiveSegmentLength: Duration(60 * time.Second), DVRWindowLength: Duration(30 * time.Second)},
	// archiving without DVR: 24 h in 10 min archive segments, 30 s DVR window
	"archive": {Archiving: true, ArchiveLength: Duration(24 * time.Hour), ArchiveSegmentLength: Duration(10 * time.Minute), DVRWindowLength: Duration(30 * time.Second)},
	// archiving with DVR: 24 h in 10 min archive segments, 1 h DVR window
	"archive-dvr": {Archiving: true, ArchiveLength: Duration(24 * time.Hour), ArchiveSegmentLength: Duration(10 * time.Minute), DVRWindowLength: Duration(time.Hour)},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var n []string
	for k := range Presets {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Resolve returns o over preset over Defaults: every zero field of o takes the
// preset's value, then the default's. A bool set in the preset cannot be unset by a
// zero value: use no preset for that.
func Resolve(preset string, o Options) (Options, error) {
	base := Options{}
	if preset != "" {
		p, ok := Presets[preset]
		if !ok {
			return Options{}, fmt.Errorf("unknown preset %q (presets: %s): %w", preset, strings.Join(PresetNames(), ", "), media.ErrBadRequest)
		}
		base = p
	}
	out := overlay(overlay(Defaults, base), o)
	return out, out.Validate()
}

// overlay returns base with the non-zero fields of top.
func overlay(base, top Options) Options {
	pick := func(b, t Duration) Duration {
		if t != 0 {
			return t
		}
		return b
	}
	base.Archiving = base.Archiving || top.Archiving
	if top.ArchiveDir != "" {
		base.ArchiveDir = top.ArchiveDir
	}
	base.ArchiveLength = pick(base.ArchiveLength, top.ArchiveLength)
	base.ArchiveSegmentLength = pick(base.ArchiveSegmentLength, top.ArchiveSegmentLength)
	base.DVRWindowLength = pick(base.DVRWindowLength, top.DVRWindowLength)
	base.RestartOnEncoderReconnect = base.RestartOnEncoderReconnect || top.RestartOnEncoderReconnect
	if top.SegmentAddressing != "" {
		base.SegmentAddressing = top.SegmentAddressing
	}
	base.SegmentDuration = pick(base.SegmentDuration, top.SegmentDuration)
	base.MinBufferTime = pick(base.MinBufferTime, top.MinBufferTime)
	base.SuggestedPresentationDelay = pick(base.SuggestedPresentationDelay, top.SuggestedPresentationDelay)
	if top.HLSFMP4 != nil {
		base.HLSFMP4 = top.HLSFMP4
	}
	return base
}

// Validate says what is wrong with resolved options, in the words of the option.
func (o Options) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf(format+": %w", append(a, media.ErrBadRequest)...)
	}
	for name, d := range map[string]Duration{
		"archive_length": o.ArchiveLength, "archive_segment_length": o.ArchiveSegmentLength,
		"dvr_window_length": o.DVRWindowLength, "segment_duration": o.SegmentDuration,
		"min_buffer_time": o.MinBufferTime, "suggested_presentation_delay": o.SuggestedPresentationDelay,
	} {
		if d < 0 {
			return bad("%s cannot be negative", name)
		}
	}
	switch {
	case o.SegmentAddressing != AddressTime && o.SegmentAddressing != AddressNumber:
		return bad("segment_addressing %q: use %q (SegmentTimeline, $Time$) or %q ($Number$)", o.SegmentAddressing, AddressTime, AddressNumber)
	case o.HLSFMP4 != nil && !*o.HLSFMP4:
		return bad("hls_fmp4: false asks for MPEG-TS HLS, which Streambed does not make; HLS is always fMP4 (CMAF)")
	case o.SegmentDuration < Duration(100*time.Millisecond) || o.SegmentDuration > Duration(time.Minute):
		return bad("segment_duration %s: use the encoder's segment length, 100ms to 1m", o.SegmentDuration)
	case o.DVRWindowLength < o.SegmentDuration:
		return bad("dvr_window_length %s is shorter than one segment (%s)", o.DVRWindowLength, o.SegmentDuration)
	case o.Archiving && o.ArchiveLength != 0 && o.ArchiveLength < o.DVRWindowLength:
		return bad("archive_length %s is shorter than the DVR window (%s): the window would point at pruned segments", o.ArchiveLength, o.DVRWindowLength)
	case o.Archiving && o.ArchiveSegmentLength != 0 && o.ArchiveLength != 0 && o.ArchiveSegmentLength > o.ArchiveLength:
		return bad("archive_segment_length %s is longer than archive_length %s", o.ArchiveSegmentLength, o.ArchiveLength)
	case !o.Archiving && (o.ArchiveLength != 0 || o.ArchiveSegmentLength != 0 || o.ArchiveDir != ""):
		return bad("archive_length, archive_segment_length and archive_dir need archiving: true")
	}
	return nil
}
