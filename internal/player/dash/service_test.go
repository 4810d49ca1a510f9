package dash

import (
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
)

func TestServiceDescription(t *testing.T) {
	const head = `<MPD type="dynamic" availabilityStartTime="2024-01-01T00:00:00Z">`
	const tail = `<Period start="PT0S"><AdaptationSet mimeType="video/mp4"><SegmentTemplate media="$Number$.m4s" duration="2"/><Representation id="v" bandwidth="1"/></AdaptationSet></Period></MPD>`
	tests := map[string]struct {
		sd   string
		want *player.ServiceDescription
	}{
		"none": {"", nil},
		"as origin writes it": {`<ServiceDescription id="0"><Latency referenceId="0" target="1128" min="628" max="3128"/><PlaybackRate min="0.96" max="1.04"/></ServiceDescription>`,
			&player.ServiceDescription{TargetLatency: 1128 * time.Millisecond, MinLatency: 628 * time.Millisecond, MaxLatency: 3128 * time.Millisecond, MinPlaybackRate: 0.96, MaxPlaybackRate: 1.04}},
		"latency only": {`<ServiceDescription id="0"><Latency target="3000"/></ServiceDescription>`,
			&player.ServiceDescription{TargetLatency: 3 * time.Second}},
		"insane values left out": {`<ServiceDescription id="0"><Latency target="-5" max="99999999999"/><PlaybackRate min="0.1" max="NaN"/></ServiceDescription>`,
			&player.ServiceDescription{}},
	}
	for name, tc := range tests {
		m, err := Parse([]byte(head+tc.sd+tail), "http://o/live/c/manifest.mpd", time.Now())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := m.ServiceDescription
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}
