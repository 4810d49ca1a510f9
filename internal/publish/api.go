package publish

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/source/ingest"
)

// Routes registers the API, every route behind the admin token:
//
//	GET    /api/channels         every publishing point
//	POST   /api/channels         create one: {"name": …, "preset": …, options…} → 201
//	GET    /api/channels/{name}  one
//	PATCH  /api/channels/{name}  change its options: {"preset": …, options…}
//	DELETE /api/channels/{name}  stop and forget it (its archive stays on disk)
//	POST   /api/channels/{name}/clips  cut {"name", "start", "end"} of its archive into
//	                             an on-demand asset → 201 {"name", "dash", "hls", …}
func (p *Points) Routes(handle func(pattern string, h http.Handler), adminToken string) {
	auth := func(f http.HandlerFunc) http.Handler { return requireToken(adminToken, f) }
	handle("GET /api/channels", auth(p.serveList))
	handle("POST /api/channels", auth(p.serveCreate))
	handle("GET /api/channels/{name}", auth(p.serveGet))
	handle("PATCH /api/channels/{name}", auth(p.servePatch))
	handle("DELETE /api/channels/{name}", auth(p.serveDelete))
	handle("POST /api/channels/{name}/clips", auth(p.serveClip))
}

// requireToken answers 401 unless the request carries Authorization: Bearer token.
func requireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if token == "" || !strings.EqualFold(scheme, "Bearer") ||
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="streambed channels"`)
			httperr.Write(w, httperr.WithStatus(http.StatusUnauthorized, errors.New(
				"missing or wrong admin token: send Authorization: Bearer TOKEN (the token is admin_token in the configuration, or the file admin.token in the origin's data folder)")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ChannelJSON is a publishing point as the API shows it. The CLI reads it too.
type ChannelJSON struct {
	Name        string `json:"name"`
	Source      string `json:"source"` // config or api
	Preset      string `json:"preset,omitempty"`
	IngestURL   string `json:"ingest_url"` // POST {ingest_url}/Streams({track}.cmfv|.cmfa)
	IngestToken string `json:"ingest_token"`
	DASH        string `json:"dash"` // the manifest segment_addressing picks
	HLS         string `json:"hls"`
	// State is waiting (no encoder has sent a track yet, or none since the
	// restart), live (an encoder is connected) or idle (encoders sent and left).
	State   string               `json:"state"`
	Tracks  []ingest.TrackStatus `json:"tracks"`
	Options Options              `json:"options"` // resolved: preset and defaults applied
}

func (p *Points) channelJSON(r *http.Request, pt Point) ChannelJSON {
	base := baseURL(r)
	dash := "/live/" + pt.Name + "/manifest-timeline.mpd"
	if pt.Options.SegmentAddressing == AddressNumber {
		dash = "/live/" + pt.Name + "/manifest.mpd"
	}
	tracks, _ := p.in.Status(pt.Name)
	if tracks == nil {
		tracks = []ingest.TrackStatus{}
	}
	state := "waiting"
	for _, t := range tracks {
		if t.Connected {
			state = "live"
			break
		}
		if t.Chunks > 0 {
			state = "idle"
		}
	}
	return ChannelJSON{
		Name: pt.Name, Source: pt.Source, Preset: pt.Preset,
		IngestURL: base + "/ingest/" + pt.Name, IngestToken: pt.Token,
		DASH: base + dash, HLS: base + "/live/" + pt.Name + "/master.m3u8",
		State: state, Tracks: tracks, Options: pt.Options,
	}
}

// baseURL is the origin as the client reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (p *Points) serveList(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Channels []ChannelJSON `json:"channels"`
		Presets  []string      `json:"presets"`
	}{Channels: []ChannelJSON{}, Presets: PresetNames()}
	for _, pt := range p.List() {
		out.Channels = append(out.Channels, p.channelJSON(r, pt))
	}
	writeJSON(w, http.StatusOK, out)
}

func (p *Points) serveGet(w http.ResponseWriter, r *http.Request) {
	pt, err := p.Get(r.PathValue("name"))
	if err != nil {
		httperr.Write(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p.channelJSON(r, pt))
}

// CreateRequest is the body of POST /api/channels: options sit beside the name.
type CreateRequest struct {
	Name        string `json:"name"`
	Preset      string `json:"preset,omitempty"`
	IngestToken string `json:"ingest_token,omitempty"` // empty: generated
	Options
}

// PatchRequest is the body of PATCH /api/channels/{name}.
type PatchRequest struct {
	Preset string `json:"preset,omitempty"`
	Options
}

func (p *Points) serveCreate(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if err := decodeBody(r, &req); err != nil {
		httperr.Write(w, err)
		return
	}
	pt, err := p.Create(Spec{Name: req.Name, Preset: req.Preset, Options: req.Options, Token: req.IngestToken})
	if err != nil {
		httperr.Write(w, apiError(err))
		return
	}
	w.Header().Set("Location", "/api/channels/"+pt.Name)
	writeJSON(w, http.StatusCreated, p.channelJSON(r, *pt))
}

func (p *Points) servePatch(w http.ResponseWriter, r *http.Request) {
	var req PatchRequest
	if err := decodeBody(r, &req); err != nil {
		httperr.Write(w, err)
		return
	}
	pt, err := p.Update(r.PathValue("name"), req.Preset, req.Options)
	if err != nil {
		httperr.Write(w, apiError(err))
		return
	}
	writeJSON(w, http.StatusOK, p.channelJSON(r, pt))
}

func (p *Points) serveDelete(w http.ResponseWriter, r *http.Request) {
	if err := p.Delete(r.PathValue("name")); err != nil {
		httperr.Write(w, apiError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// apiError gives the publishing points' own errors their status.
func apiError(err error) error {
	if errors.Is(err, ErrExists) || errors.Is(err, ErrConflict) {
		return httperr.WithStatus(http.StatusConflict, err)
	}
	return err
}

// maxBody bounds a request body: options are a few hundred bytes.
const maxBody = 64 << 10

// decodeBody reads one JSON object with no unknown fields.
func decodeBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("reading the body: %v: %w", err, media.ErrBadRequest)
	}
	if len(b) > maxBody {
		return httperr.WithStatus(http.StatusRequestEntityTooLarge, fmt.Errorf("the body is over %d bytes", maxBody))
	}
	return DecodeJSON(b, v)
}

// DecodeJSON reads one JSON object into v, refusing unknown fields and trailing data.
func DecodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body is not a valid channel request (%v); see docs/protocols/channels.md: %w", err, media.ErrBadRequest)
	}
	if dec.More() {
		return fmt.Errorf("the body has data after its JSON object: %w", media.ErrBadRequest)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		httperr.Write(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
