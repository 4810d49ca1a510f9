package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// streamJSON is one entry of GET /api/streams.
type streamJSON struct {
	Name  string `json:"name"`
	Live  bool   `json:"live"`
	State string `json:"state,omitempty"` // live channels: waiting (for an encoder or a first segment), live, ended
	// ArchiveError is the channel archive's newest failure; ArchiveFull says new
	// media is refused until its disk has room.
	ArchiveError      string `json:"archive_error,omitempty"`
	ArchiveFull       bool   `json:"archive_full,omitempty"`
	SegmentDurationMS int64  `json:"segment_duration_ms"`
	// ChunkDurationMS is a live channel's longest chunk when it is shorter than its
	// segments: its MPD is low-latency DASH (docs/protocols/ll-dash.md).
	ChunkDurationMS int64         `json:"chunk_duration_ms,omitempty"`
	DurationMS      int64         `json:"duration_ms,omitempty"`
	DVRWindowMS     int64         `json:"dvr_window_ms,omitempty"`
	DASH            string        `json:"dash"`
	DASHTimeline    string        `json:"dash_timeline"`
	HLS             string        `json:"hls"`
	Tracks          []media.Track `json:"tracks"`
	// Transports add their own endpoints of the stream ("ws": its WebSocket push URL).
	Endpoints map[string]string `json:"-"`
}

// MarshalJSON flattens the transports' endpoints beside the origin's own keys.
func (j streamJSON) MarshalJSON() ([]byte, error) {
	type plain streamJSON
	b, err := json.Marshal(plain(j))
	if err != nil || len(j.Endpoints) == 0 {
		return b, err
	}
	extra, err := json.Marshal(j.Endpoints)
	if err != nil {
		return nil, err
	}
	// {"name":…} + {"ws":…} → {"name":…,"ws":…}
	return append(append(b[:len(b)-1], ','), extra[1:]...), nil
}

// Advertise lets a transport list its endpoint of each stream in /api/streams under
// key: endpoint returns the URL path for a stream, or "" for none.
func (s *Server) Advertise(key string, endpoint func(st hub.Stream) string) {
	s.endpoints = append(s.endpoints, advertised{key, endpoint})
}

type advertised struct {
	key      string
	endpoint func(hub.Stream) string
}

func (s *Server) advertise(j *streamJSON, st hub.Stream) {
	for _, a := range s.endpoints {
		if u := a.endpoint(st); u != "" {
			if j.Endpoints == nil {
				j.Endpoints = map[string]string{}
			}
			j.Endpoints[a.key] = u
		}
	}
}

// tracksJSON copies tracks without their segment lists (which can be long).
func tracksJSON(ts []*media.Track) []media.Track {
	out := make([]media.Track, len(ts))
	for i, t := range ts {
		out[i] = *t
		out[i].Segments = nil
		out[i].InitPath = ""
	}
	return out
}

func (s *Server) handleStreams(w http.ResponseWriter, r *http.Request) {
	var list []streamJSON
	for _, c := range s.hub.Channels() {
		info := c.Info()
		list = append(list, streamJSON{
			Name: info.Name, Live: true,
			SegmentDurationMS: c.Timeline().SegmentDuration.Milliseconds(),
			ChunkDurationMS:   chunkDurationMS(c),
			DVRWindowMS:       c.Timeline().TimeShiftBufferDepth.Milliseconds(),
			DASH:              layout.Manifest(true, info.Name, layout.MPD),
			DASHTimeline:      layout.Manifest(true, info.Name, layout.MPDTimeline),
			HLS:               layout.Manifest(true, info.Name, layout.Master),
			Tracks:            tracksJSON(info.Tracks),
			State:             channelState(c, s.clock()),
		})
		if st, ok := c.Archive(); ok && st.LastErr != nil {
			list[len(list)-1].ArchiveError, list[len(list)-1].ArchiveFull = st.LastErr.Error(), st.Full
		}
		s.advertise(&list[len(list)-1], c)
	}
	for _, a := range s.hub.Assets() {
		info := a.Info()
		list = append(list, streamJSON{
			Name: info.Name, SegmentDurationMS: info.SegmentDuration.Milliseconds(), DurationMS: info.Duration.Milliseconds(),
			DASH:         layout.Manifest(false, info.Name, layout.MPD),
			DASHTimeline: layout.Manifest(false, info.Name, layout.MPDTimeline),
			HLS:          layout.Manifest(false, info.Name, layout.Master),
			Tracks:       tracksJSON(info.Tracks),
		})
		s.advertise(&list[len(list)-1], a)
	}
	if list == nil {
		list = []streamJSON{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	doc := map[string]any{"streams": list}
	if p := s.httpsPort.Load(); p > 0 {
		doc["https_port"] = p // where this origin speaks HTTP/2 to browsers (TLS)
	}
	_ = json.NewEncoder(w).Encode(doc)
}

// chunkDurationMS is the chunk duration a channel's low-latency MPD announces, in
// milliseconds (at least 1), or 0 when its MPD is not low latency.
func chunkDurationMS(c *hub.Channel) int64 {
	ll := lowLatency(c)
	if ll == nil {
		return 0
	}
	return max(ll.ChunkDuration.Milliseconds(), 1)
}

// channelState is "waiting" until a channel has a segment complete in every track
// (an ingest channel before its encoder connects), then "live", or "ended".
func channelState(c *hub.Channel, now time.Time) string {
	switch _, ok := c.Latest(now); {
	case c.Ended():
		return "ended"
	case ok:
		return "live"
	}
	return "waiting"
}

// handleTime is the UTCTiming source (urn:mpeg:dash:utc:http-iso:2014): the server's
// clock in ISO 8601 with milliseconds. It honours ?nowMS= like the live routes.
func (s *Server) handleTime(w http.ResponseWriter, r *http.Request) {
	now, _, err := s.requestNow(r)
	if err != nil {
		httperr.Write(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(now.UTC().Format("2006-01-02T15:04:05.000Z")))
}
