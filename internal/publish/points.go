package publish

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/source/ingest"
)

// Where a publishing point was declared.
const (
	FromConfig = "config" // the serve configuration: changed by editing it
	FromAPI    = "api"    // /api/channels: kept in the data folder
)

// Spec asks for a publishing point.
type Spec struct {
	Name    string  `json:"name"`
	Preset  string  `json:"preset,omitempty"`
	Options Options `json:"options"`
	// Token is the encoder's bearer token; empty: one is generated.
	Token string `json:"ingest_token,omitempty"`
}

// Point is a publishing point as it runs: its spec resolved.
type Point struct {
	Name    string
	Source  string // FromConfig or FromAPI
	Preset  string
	Given   Options // as asked, before the preset and defaults
	Options Options // resolved
	Token   string
	Created time.Time
}

// Points are an origin's publishing points. Its methods are safe for concurrent use.
type Points struct {
	ctx     context.Context // the origin's life: channels run under it
	hub     *hub.Hub
	in      *ingest.Ingest
	dataDir string
	log     *slog.Logger
	now     func() time.Time

	// AssetsDir is where clips cut from archives go, as on-demand assets (serve's
	// assets folder, so they are served again after a restart). Set it before use.
	AssetsDir string

	mu     sync.Mutex
	points map[string]*Point
	// dormant are kept points that could not start (their name taken by the
	// configuration): they stay in the file until the clash is resolved.
	dormant []keptPoint
}

// New returns the publishing points of an origin whose channels live in h and are
// fed through in; API-made channels are kept in dataDir/channels.json. Call Restore
// to bring those back.
func New(ctx context.Context, h *hub.Hub, in *ingest.Ingest, dataDir string, log *slog.Logger) *Points {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Points{ctx: ctx, hub: h, in: in, dataDir: dataDir, log: log, now: time.Now, points: map[string]*Point{},
		AssetsDir: filepath.Join(dataDir, "clips")}
}

// StateFile is where API-made publishing points are kept.
func StateFile(dataDir string) string { return filepath.Join(dataDir, "channels.json") }

// AddConfigured starts a publishing point declared in the configuration. Its token,
// when the configuration gives none, is generated once and kept in the data folder.
func (p *Points) AddConfigured(s Spec) (*Point, error) {
	if s.Token == "" {
		tok, err := ingest.LoadOrCreateToken(p.dataDir, s.Name)
		if err != nil {
			return nil, err
		}
		s.Token = tok
	}
	return p.add(s, FromConfig, false)
}

// Create starts a publishing point asked for through the API and keeps it.
func (p *Points) Create(s Spec) (*Point, error) { return p.add(s, FromAPI, true) }

func (p *Points) add(s Spec, source string, persist bool) (*Point, error) {
	if !media.ValidName(s.Name) {
		return nil, fmt.Errorf("channel name %q: use 1–64 of [A-Za-z0-9._-]: %w", s.Name, media.ErrBadRequest)
	}
	opts, err := Resolve(s.Preset, s.Options)
	if err != nil {
		return nil, fmt.Errorf("channel %q: %w", s.Name, err)
	}
	if s.Token == "" {
		if s.Token, err = newToken(); err != nil {
			return nil, err
		}
	}
	pt := &Point{Name: s.Name, Source: source, Preset: s.Preset, Given: s.Options, Options: opts, Token: s.Token, Created: p.now().UTC()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, taken := p.points[s.Name]; taken || p.hasChannel(s.Name) {
		return nil, fmt.Errorf("channel %q exists already: %w", s.Name, ErrExists)
	}
	if err := p.start(pt); err != nil {
		return nil, err
	}
	p.points[s.Name] = pt
	if persist {
		if err := p.saveLocked(); err != nil {
			delete(p.points, s.Name)
			_ = p.hub.RemoveChannel(s.Name)
			return nil, err
		}
	}
	p.log.Info("publishing point created", "channel", s.Name, "source", source, "preset", s.Preset)
	return pt, nil
}

func (p *Points) hasChannel(name string) bool {
	_, err := p.hub.Channel(name)
	return err == nil
}

// start makes the point's hub channel through ingest.
func (p *Points) start(pt *Point) error {
	o := pt.Options
	archive := ""
	if o.Archiving {
		archive = p.archiveDir(*pt)
	}
	_, err := p.in.AddChannel(p.ctx, p.hub, ingest.ChannelOptions{
		Name: pt.Name, Token: pt.Token,
		SegmentDuration:      time.Duration(o.SegmentDuration),
		DVRWindow:            time.Duration(o.DVRWindowLength),
		PresentationDelay:    time.Duration(o.SuggestedPresentationDelay),
		MinBufferTime:        time.Duration(o.MinBufferTime),
		ArchiveDir:           archive,
		ArchiveLength:        time.Duration(o.ArchiveLength),
		ArchiveSegmentLength: time.Duration(o.ArchiveSegmentLength),
		RestartOnReconnect:   o.RestartOnEncoderReconnect,
	})
	return err
}

// archiveDir is where a point's archive is.
func (p *Points) archiveDir(pt Point) string {
	if pt.Options.ArchiveDir != "" {
		return pt.Options.ArchiveDir
	}
	return filepath.Join(p.dataDir, "archive", pt.Name)
}

// ErrExists is a name already taken: 409.
var ErrExists = errors.New("exists already")

// ErrConflict is a change that cannot be made now (a configured channel deleted
// through the API, options changed under a connected encoder): 409.
var ErrConflict = errors.New("conflict")

// Get returns the named point.
func (p *Points) Get(name string) (Point, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt, ok := p.points[name]
	if !ok {
		return Point{}, fmt.Errorf("no publishing point %q: %w", name, media.ErrNotFound)
	}
	return *pt, nil
}

// List returns every point, by name.
func (p *Points) List() []Point {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Point, 0, len(p.points))
	for _, pt := range p.points {
		out = append(out, *pt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Delete stops and forgets an API-made point. Its archive stays on disk.
func (p *Points) Delete(name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt, ok := p.points[name]
	if !ok {
		return fmt.Errorf("no publishing point %q: %w", name, media.ErrNotFound)
	}
	if pt.Source == FromConfig {
		return fmt.Errorf("channel %q is declared in the serve configuration: remove it there and restart: %w", name, ErrConflict)
	}
	delete(p.points, name)
	if err := p.saveLocked(); err != nil {
		p.points[name] = pt
		return err
	}
	if err := p.hub.RemoveChannel(name); err != nil && !errors.Is(err, media.ErrNotFound) {
		return err
	}
	p.log.Info("publishing point deleted", "channel", name)
	return nil
}

// Update changes an API-made point's options (fields of o that are set override;
// preset, when not empty, replaces the preset). The channel is remade with them,
// which is refused while an encoder is connected: its timeline would break.
func (p *Points) Update(name, preset string, o Options) (Point, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt, ok := p.points[name]
	if !ok {
		return Point{}, fmt.Errorf("no publishing point %q: %w", name, media.ErrNotFound)
	}
	if pt.Source == FromConfig {
		return Point{}, fmt.Errorf("channel %q is declared in the serve configuration: change it there and restart: %w", name, ErrConflict)
	}
	if preset == "" {
		preset = pt.Preset
	}
	given := overlay(pt.Given, o)
	if o.HLSFMP4 != nil {
		given.HLSFMP4 = o.HLSFMP4
	}
	resolved, err := Resolve(preset, given)
	if err != nil {
		return Point{}, fmt.Errorf("channel %q: %w", name, err)
	}
	if connected(p.in, name) {
		return Point{}, fmt.Errorf("channel %q has an encoder connected: stop it first (or delete and create the channel again) to change its options: %w", name, ErrConflict)
	}
	next := *pt
	next.Preset, next.Given, next.Options = preset, given, resolved
	if err := p.hub.RemoveChannel(name); err != nil && !errors.Is(err, media.ErrNotFound) {
		return Point{}, err
	}
	if err := p.start(&next); err != nil {
		// Put the old channel back: the change is refused, nothing is lost.
		if rerr := p.start(pt); rerr != nil {
			p.log.Error("publishing point lost its channel after a failed change", "channel", name, "err", rerr)
		}
		return Point{}, err
	}
	p.points[name] = &next
	if err := p.saveLocked(); err != nil {
		return Point{}, err
	}
	p.log.Info("publishing point changed", "channel", name)
	return next, nil
}

// connected says whether an encoder feeds any track of channel name now.
func connected(in *ingest.Ingest, name string) bool {
	tracks, _ := in.Status(name)
	for _, t := range tracks {
		if t.Connected {
			return true
		}
	}
	return false
}

// kept is channels.json: the API-made points with their tokens (the file is 0600).
type kept struct {
	Channels []keptPoint `json:"channels"`
}

type keptPoint struct {
	Name    string    `json:"name"`
	Preset  string    `json:"preset,omitempty"`
	Options Options   `json:"options"` // as asked
	Token   string    `json:"ingest_token"`
	Created time.Time `json:"created"`
}

func (p *Points) saveLocked() error {
	var k kept
	for _, pt := range p.points {
		if pt.Source == FromAPI {
			k.Channels = append(k.Channels, keptPoint{pt.Name, pt.Preset, pt.Given, pt.Token, pt.Created})
		}
	}
	k.Channels = append(k.Channels, p.dormant...)
	sort.Slice(k.Channels, func(i, j int) bool { return k.Channels[i].Name < k.Channels[j].Name })
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(StateFile(p.dataDir), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("keeping the publishing points: %w", err)
	}
	return nil
}

// Restore starts the points kept by an earlier run. A point that cannot start (its
// name now taken by the configuration) is logged and stays in the file.
func (p *Points) Restore() error {
	b, err := os.ReadFile(StateFile(p.dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var k kept
	if err := json.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("%s is damaged (%v): fix or remove it", StateFile(p.dataDir), err)
	}
	for _, c := range k.Channels {
		pt, err := p.add(Spec{Name: c.Name, Preset: c.Preset, Options: c.Options, Token: c.Token}, FromAPI, false)
		if err != nil {
			p.log.Error("publishing point not restored (kept in the file)", "channel", c.Name, "err", err)
			p.mu.Lock()
			p.dormant = append(p.dormant, c)
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		pt.Created = c.Created
		p.mu.Unlock()
	}
	return nil
}

func newToken() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// AdminTokenFile is where a generated admin token is kept.
func AdminTokenFile(dataDir string) string { return filepath.Join(dataDir, "admin.token") }

// AdminToken is the token /api/channels asks for: configured, or generated once in
// the data folder so that `streambed channel` on the origin's machine finds it.
func AdminToken(dataDir, configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	return fsutil.LoadOrCreateToken(AdminTokenFile(dataDir))
}
