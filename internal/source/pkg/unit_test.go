package pkg

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseLadder(t *testing.T) {
	tests := []struct {
		in   string
		want []Rung
		err  string
	}{
		{DefaultLadder, []Rung{{180, 100000}, {360, 400000}, {540, 800000}, {720, 1500000}}, ""},
		{"720p:1.5M, 180p:100k", []Rung{{180, 100000}, {720, 1500000}}, ""},
		{"360:400000", []Rung{{360, 400000}}, ""},
		{"", nil, "no rungs"},
		{"360p", nil, "HEIGHTp:BITRATE"},
		{"361p:400k", nil, "even"},
		{"360p:fast", nil, "bitrate"},
		{"360p:400k,360p:500k", nil, "twice"},
	}
	for _, tc := range tests {
		got, err := ParseLadder(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseLadder(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseLadder(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseBitrate(t *testing.T) {
	for in, want := range map[string]int{"128k": 128000, "1.5M": 1500000, "64000": 64000, "800kbps": 800000, "96K": 96000} {
		if got, err := ParseBitrate(in); err != nil || got != want {
			t.Errorf("ParseBitrate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-5k", "12", "fast", "1e12"} {
		if _, err := ParseBitrate(in); err == nil {
			t.Errorf("ParseBitrate(%q) accepted", in)
		}
	}
	if got := AudioTrackID(128000); got != "a128" {
		t.Errorf("AudioTrackID = %q", got)
	}
	if got := (Rung{720, 1500000}).ID(); got != "v720" {
		t.Errorf("Rung.ID = %q", got)
	}
}

func TestAlignmentPeriod(t *testing.T) {
	tests := []struct {
		seg   time.Duration
		fps   int
		audio bool
		want  time.Duration
	}{
		{2 * time.Second, 25, true, 8 * time.Second},
		{10 * time.Second, 25, true, 40 * time.Second},
		{time.Second, 25, true, 8 * time.Second},
		{2 * time.Second, 25, false, 2 * time.Second},
		{2 * time.Second, 30, true, 8 * time.Second},
		{6 * time.Second, 25, true, 24 * time.Second},
		{500 * time.Millisecond, 25, true, 8 * time.Second},
		{40 * time.Millisecond, 25, true, 320 * time.Millisecond},
		{1500 * time.Millisecond, 24, true, 24 * time.Second},
	}
	for _, tc := range tests {
		got, err := AlignmentPeriod(tc.seg, tc.fps, tc.audio)
		if err != nil || got != tc.want {
			t.Errorf("AlignmentPeriod(%s, %d, %v) = %s, %v; want %s", tc.seg, tc.fps, tc.audio, got, err, tc.want)
		}
	}
	if _, err := AlignmentPeriod(0, 25, true); err == nil {
		t.Error("zero segment duration accepted")
	}
}

func TestLoopDuration(t *testing.T) {
	tests := []struct {
		input, period, want time.Duration
		err                 bool
	}{
		{9 * time.Second, 8 * time.Second, 8 * time.Second, false},
		{40 * time.Second, 8 * time.Second, 40 * time.Second, false},
		{47999 * time.Millisecond, 8 * time.Second, 40 * time.Second, false},
		{95 * time.Second, 40 * time.Second, 80 * time.Second, false},
		{7 * time.Second, 8 * time.Second, 0, true},
	}
	for _, tc := range tests {
		got, err := LoopDuration(tc.input, tc.period)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("LoopDuration(%s, %s) = %s, %v; want %s", tc.input, tc.period, got, err, tc.want)
		}
	}
	_, err := LoopDuration(5*time.Second, 8*time.Second)
	if err == nil || !strings.Contains(err.Error(), "shorter than one loop period of 8s") {
		t.Errorf("short input error: %v", err)
	}
}

func TestEncodeArgs(t *testing.T) {
	j := &encodeJob{Duration: 8 * time.Second, Segment: 2 * time.Second, FPS: 25, Preset: "veryfast",
		Rungs: []Rung{{180, 100000}, {360, 400000}}, AudioBitrates: []int{128000}, SynthWidth: 640, SynthHeight: 360,
		Drawtext: true, WorkDir: "/w"}
	args := strings.Join(j.args(), " ")
	for _, want := range []string{
		"testsrc2=size=640x360:rate=25,drawtext=",
		"sine=frequency=440",
		"split=2[s0][s1]",
		"[s1]scale=-2:360,setsar=1[v1]",
		"-force_key_frames expr:gte(t,n_forced*2)",
		"-g 50 -keyint_min 50 -sc_threshold 0",
		"-bf 0",
		"-b:v 400k -maxrate 400k -bufsize 800k",
		"-t 8 -c:a aac -profile:a aac_low -b:a 128k -ar 48000 -ac 2",
		"/w/v180.mp4", "/w/v360.mp4", "/w/a128.mp4",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q:\n%s", want, args)
		}
	}
	if n := strings.Count(args, "-t 8 "); n != 5 { // two lavfi inputs, three outputs
		t.Errorf("-t 8 appears %d times, want 5", n)
	}
	// Two AAC renditions: one source split, an encoder each.
	j.AudioBitrates = []int{64000, 128000}
	args = strings.Join(j.args(), " ")
	for _, want := range []string{"[1:a]anull,asplit=2[a0][a1]", "-map [a0] -t 8 -c:a aac -profile:a aac_low -b:a 64k", "-map [a1] -t 8 -c:a aac -profile:a aac_low -b:a 128k", "/w/a64.mp4", "/w/a128.mp4"} {
		if !strings.Contains(args, want) {
			t.Errorf("args with two audio tracks lack %q:\n%s", want, args)
		}
	}
	j.Input, j.AudioBitrates, j.Segment = "in.mov", nil, 1500*time.Millisecond
	args = strings.Join(j.args(), " ")
	if !strings.Contains(args, "-i in.mov") || strings.Contains(args, "aac") || !strings.Contains(args, "n_forced*1.5)") ||
		!strings.Contains(args, "-g 38") {
		t.Errorf("file input args:\n%s", args)
	}
	if strings.Contains(args, "-x264-params") {
		t.Errorf("x264 params without asking:\n%s", args)
	}
	j.X264Params = "slices=4"
	if args = strings.Join(j.args(), " "); !strings.Contains(args, "-x264-params slices=4 /w/v180.mp4") {
		t.Errorf("x264 params not before the rung's output:\n%s", args)
	}
}

func TestFingerprint(t *testing.T) {
	base := Options{Name: "x", SegmentDuration: 2 * time.Second, Ladder: []Rung{{180, 100000}}, AudioBitrate: 64000, FPS: 25, Preset: "ultrafast"}
	fp := Fingerprint(base, "synthetic:8s")
	if Fingerprint(base, "synthetic:8s") != fp {
		t.Fatal("fingerprint not deterministic")
	}
	changes := []func(*Options){
		func(o *Options) { o.Name = "y" },
		func(o *Options) { o.SegmentDuration = time.Second },
		func(o *Options) { o.Ladder = []Rung{{180, 200000}} },
		func(o *Options) { o.AudioBitrate = 128000 },
		func(o *Options) { o.FPS = 30 },
		func(o *Options) { o.Preset = "veryfast" },
		func(o *Options) { o.KeepDuration = true },
		func(o *Options) { o.ExtraAudioBitrates = []int{32000} },
		func(o *Options) { o.X264Params = "slices=4" },
	}
	for i, change := range changes {
		o := base
		change(&o)
		if Fingerprint(o, "synthetic:8s") == fp {
			t.Errorf("change %d keeps the fingerprint", i)
		}
	}
	if Fingerprint(base, "synthetic:16s") == fp {
		t.Error("source change keeps the fingerprint")
	}
}

func TestProgressLinesWithoutTerminal(t *testing.T) {
	var b strings.Builder
	p := newProgressBar(&b, "encoding x", 10*time.Second)
	for ms := 0; ms <= 10000; ms += 250 {
		p.update(time.Duration(ms)*time.Millisecond, "3.1x")
	}
	p.finish()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 11 || lines[10] != "encoding x 100%  10.0s / 10.0s  speed 3.1x" || strings.Contains(b.String(), "\r") {
		t.Errorf("got %d lines:\n%s", len(lines), b.String())
	}
}
