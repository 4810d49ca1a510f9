package manifest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/internal/manifesttest"
	"github.com/streambed/streambed/internal/media"
)

func TestExpandTemplate(t *testing.T) {
	v := manifest.TemplateValues{RepresentationID: "v720", Number: 42, Time: 154551887100000, Bandwidth: 3000000}
	for _, c := range []struct {
		tmpl, want string
		err        bool
	}{
		{"$RepresentationID$/$Number$.m4s", "v720/42.m4s", false},
		{"$RepresentationID$/t$Time$.m4s", "v720/t154551887100000.m4s", false},
		{"$RepresentationID$/$Number%05d$.m4s", "v720/00042.m4s", false},
		{"$Bandwidth$/$Time%03d$", "3000000/154551887100000", false},
		{"a$$b/$Number$", "a$b/42", false},
		{"plain.mp4", "plain.mp4", false},
		{"$Number", "", true},
		{"$Foo$", "", true},
		{"$Number%5d$", "", true},
		{"$RepresentationID%05d$", "", true},
	} {
		got, err := manifest.ExpandTemplate(c.tmpl, v)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ExpandTemplate(%q) = %q, %v; want %q, error %v", c.tmpl, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, media.ErrInvalidMedia) {
			t.Errorf("ExpandTemplate(%q): error %v is not ErrInvalidMedia", c.tmpl, err)
		}
	}
	// In two steps, as a player does: per representation, then per segment.
	rep := manifest.TemplateValues{RepresentationID: "v720", Bandwidth: 3000000, Only: manifest.IdentRepresentationID | manifest.IdentBandwidth}
	half, err := manifest.ExpandTemplate("$RepresentationID$/$$$Bandwidth$/$Number%05d$-$Time$.m4s", rep)
	if err != nil || half != "v720/$$3000000/$Number%05d$-$Time$.m4s" {
		t.Fatalf("per representation: %q, %v", half, err)
	}
	full, err := manifest.ExpandTemplate(half, manifest.TemplateValues{Number: 7, Time: 9})
	if err != nil || full != "v720/$3000000/00007-9.m4s" {
		t.Errorf("per segment: %q, %v", full, err)
	}
	if !manifest.UsesIdentifier("x/$Number%05d$", "Number") || manifest.UsesIdentifier("x/$Time$", "Number") {
		t.Error("UsesIdentifier")
	}
}

func TestParseFrameRate(t *testing.T) {
	for _, c := range []struct {
		in, dash, hls string
		err           bool
	}{
		{"25", "25", "25.000", false},
		{"30000/1001", "30000/1001", "29.970", false},
		{"29.97", "2997/100", "29.970", false},
		{"50/2", "50/2", "25.000", false},
		{"", "", "", false},
		{"fast", "", "", true},
		{"30/0", "", "", true},
		{"-25", "", "", true},
	} {
		f, err := manifest.ParseFrameRate(c.in)
		if (err != nil) != c.err {
			t.Errorf("ParseFrameRate(%q): error %v", c.in, err)
			continue
		}
		if err != nil || f.IsZero() {
			continue
		}
		if f.DASH() != c.dash || f.HLS() != c.hls {
			t.Errorf("ParseFrameRate(%q) = %s / %s, want %s / %s", c.in, f.DASH(), f.HLS(), c.dash, c.hls)
		}
	}
}

func TestEffectiveDefaults(t *testing.T) {
	p := &manifest.Presentation{
		Stream:   &media.Stream{SegmentDuration: 4 * time.Second},
		Live:     true,
		Timeline: media.Timeline{SegmentDuration: 2 * time.Second, TimeShiftBufferDepth: 5 * time.Second},
	}
	if p.SegmentDuration() != 2*time.Second {
		t.Errorf("live segment duration %s: the timeline's wins", p.SegmentDuration())
	}
	if p.EffectiveMinBufferTime() != 2*time.Second || p.EffectiveMinimumUpdatePeriod() != 2*time.Second ||
		p.EffectiveSuggestedPresentationDelay() != 6*time.Second {
		t.Error("defaults")
	}
	// 5 s of DVR at 2 s segments keeps 2 whole segments (media.Timeline.Window).
	if got := p.EffectiveTimeShiftBufferDepth(); got != 4*time.Second {
		t.Errorf("time shift buffer %s, want 4s", got)
	}
	p.Timeline.TimeShiftBufferDepth = 0
	if got := p.EffectiveTimeShiftBufferDepth(); got != 2*time.Second {
		t.Errorf("time shift buffer %s, want one segment", got)
	}
}

func TestAssetPresentation(t *testing.T) {
	a := manifesttest.Asset("clip", 2*time.Second, 9*time.Second)
	for _, addr := range []manifest.Addressing{manifest.Number, manifest.Timeline} {
		p := manifest.AssetPresentation(a, addr)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := p.RequireSegments(); err != nil {
			t.Fatal(err)
		}
		if p.Live || p.StartNumber != 1 || len(p.Segments["a128"]) != 5 || p.Stream.Duration != 9*time.Second {
			t.Errorf("%s: %+v", addr, p)
		}
		if uri, err := p.PlaylistURI("v720"); err != nil || uri != "v720/playlist.m3u8" {
			t.Errorf("PlaylistURI = %q, %v", uri, err)
		}
	}
	if manifest.AssetPresentation(a, manifest.Timeline).MediaTemplate != manifest.AssetTimeTemplate {
		t.Error("timeline template")
	}
}

func TestValidate(t *testing.T) {
	good := func() *manifest.Presentation {
		return manifest.AssetPresentation(manifesttest.Asset("clip", 2*time.Second, 9*time.Second), manifest.Number)
	}
	for _, c := range []struct {
		name  string
		spoil func(*manifest.Presentation)
		want  error
	}{
		{"no stream", func(p *manifest.Presentation) { p.Stream = nil }, media.ErrInvalidMedia},
		{"no template", func(p *manifest.Presentation) { p.MediaTemplate = "" }, media.ErrInvalidMedia},
		{"no timescale", func(p *manifest.Presentation) { p.Stream.Tracks[0].Timescale = 0 }, media.ErrInvalidMedia},
		{"overlap", func(p *manifest.Presentation) { p.Segments["v360"][1].Start-- }, media.ErrInvalidMedia},
		{"live without start", func(p *manifest.Presentation) { p.Live = true }, media.ErrInvalidMedia},
		{"bad addressing", func(p *manifest.Presentation) { p.Addressing = 7 }, media.ErrInvalidMedia},
	} {
		p := good()
		c.spoil(p)
		if err := p.Validate(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	p := good()
	p.Live, p.Segments = true, nil
	if err := p.RequireSegments(); !errors.Is(err, media.ErrNotYet) {
		t.Errorf("empty live window: %v", err)
	}
	p.PlaylistFormat = "%s/%s.m3u8"
	if _, err := p.PlaylistURI("v"); !errors.Is(err, media.ErrInvalidMedia) {
		t.Errorf("playlist format with two verbs: %v", err)
	}
}
