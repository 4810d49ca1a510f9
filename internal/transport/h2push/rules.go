package h2push

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/layout"
)

// Rules are the push rules the admin page edits: per target (the player page, an
// asset or a channel) a strategy and resources to push when the target's page or MPD
// is requested.
type Rules struct {
	Version int              `json:"version"`
	Targets map[string]*Rule `json:"targets"` // PageTarget, "vod/NAME", "live/NAME"
}

// Rule is the push rule of one target.
type Rule struct {
	// Strategy replaces the configured default for the target's requests (nil: the
	// default). A `?push=` on the request that starts a session still wins.
	Strategy *Strategy `json:"strategy,omitempty"`
	// Push lists absolute paths to push with the page or the MPD, in order, besides
	// what the strategy pushes.
	Push []string `json:"push,omitempty"`
}

// Limits on what a rule file may hold, so one save cannot make every page request
// promise thousands of streams.
const (
	maxTargets      = 1000
	maxPushesOnRule = 500
)

// ErrInvalidRules is wrapped by every validation failure: the API answers 400 with
// the message.
var ErrInvalidRules = errors.New("invalid push rules")

// validate checks the rules against what exists. Messages name the target and the
// path so a person can fix them.
func (p *Pusher) validate(rs *Rules) error {
	if rs == nil {
		return fmt.Errorf("%w: empty document", ErrInvalidRules)
	}
	if len(rs.Targets) > maxTargets {
		return fmt.Errorf("%w: %d targets, at most %d", ErrInvalidRules, len(rs.Targets), maxTargets)
	}
	keys := make([]string, 0, len(rs.Targets))
	for k := range rs.Targets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, target := range keys {
		r := rs.Targets[target]
		if r == nil {
			return fmt.Errorf("%w: target %q has no rule (use {} or remove it)", ErrInvalidRules, target)
		}
		if len(r.Push) > maxPushesOnRule {
			return fmt.Errorf("%w: target %q pushes %d resources, at most %d", ErrInvalidRules, target, len(r.Push), maxPushesOnRule)
		}
		if target == PageTarget {
			if r.Strategy != nil {
				return fmt.Errorf("%w: target %q: the page has no strategy of its own (it uses its stream's); list resources under push", ErrInvalidRules, target)
			}
			for _, path := range r.Push {
				if p.page.hasFile(path) && cleanPath(strings.SplitN(path, "?", 2)[0]) {
					if !linkSafe(path) {
						return fmt.Errorf("%w: target %q: %q has a character that cannot go into a push or a Link header (controls, spaces, #<>,;\"\\)", ErrInvalidRules, target, path)
					}
					continue
				}
				if err := p.checkStreamPath(path, ""); err != nil {
					return fmt.Errorf("%w: target %q: %w", ErrInvalidRules, target, err)
				}
			}
			continue
		}
		res, err := parseTarget(target)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidRules, err)
		}
		if res.Live {
			if _, err := p.hub.Channel(res.Stream); err != nil {
				return fmt.Errorf("%w: target %q: there is no such live channel", ErrInvalidRules, target)
			}
		} else if _, err := p.hub.Asset(res.Stream); err != nil {
			return fmt.Errorf("%w: target %q: there is no such asset", ErrInvalidRules, target)
		}
		for _, path := range r.Push {
			if err := p.checkStreamPath(path, res.Base()); err != nil {
				return fmt.Errorf("%w: target %q: %w", ErrInvalidRules, target, err)
			}
		}
	}
	return nil
}

// linkSafe says whether a path (with its query) can be pushed and named in a
// Link: <…>; rel=preload header as it is: no control characters or spaces (HPACK
// and header values refuse them) and none of the characters that end or split a
// Link value.
func linkSafe(path string) bool {
	for i := 0; i < len(path); i++ {
		if c := path[i]; c <= ' ' || c == 0x7f || strings.IndexByte("#<>,;\"\\", c) >= 0 {
			return false
		}
	}
	return true
}

// checkStreamPath checks that path names an existing resource of a stream, under
// base when base is set (a rule may only push its own asset's files).
func (p *Pusher) checkStreamPath(path, base string) error {
	if !cleanPath(path) || strings.ContainsAny(path, "?#") {
		return fmt.Errorf("%q is not a clean absolute path on this origin (no .., //, query or fragment)", path)
	}
	if base != "" && !strings.HasPrefix(path, base) {
		return fmt.Errorf("%q is outside %s: a rule pushes only its own stream's files", path, base)
	}
	res := layout.Parse(path)
	if res.Kind == layout.KindOther || res.Kind == layout.KindPage {
		return fmt.Errorf("%q is not a manifest, init or segment of a stream, nor a file of the page", path)
	}
	if res.Live {
		c, err := p.hub.Channel(res.Stream)
		if err != nil {
			return fmt.Errorf("%q: no live channel %q", path, res.Stream)
		}
		if res.Kind == layout.KindSegment {
			return fmt.Errorf("%q: live segments come and go; choose a strategy (k<K>, all) to push them", path)
		}
		if res.Track != "" {
			if _, err := c.Info().Track(res.Track); err != nil {
				return fmt.Errorf("%q: channel %q has no track %q", path, res.Stream, res.Track)
			}
		}
		return nil
	}
	a, err := p.hub.Asset(res.Stream)
	if err != nil {
		return fmt.Errorf("%q: no asset %q", path, res.Stream)
	}
	if res.Track != "" {
		if _, err := a.Info().Track(res.Track); err != nil {
			return fmt.Errorf("%q: asset %q has no track %q", path, res.Stream, res.Track)
		}
	}
	if res.Kind == layout.KindSegment {
		var err error
		if res.ByTime {
			_, err = a.RefAt(res.Track, res.Time, time.Time{})
		} else {
			_, err = a.Ref(res.Track, res.Number, time.Time{})
		}
		if err != nil {
			return fmt.Errorf("%q: no such segment file in asset %q", path, res.Stream)
		}
	}
	return nil
}

// ruleStore holds the rules in force and their file. Readers take a snapshot with a
// single atomic load; a save validates, writes the file atomically, then swaps the
// snapshot, so a request sees the old rules or the new ones, never a mix, and a
// crash never leaves a half-written file.
type ruleStore struct {
	path string
	cur  atomic.Pointer[Rules]
	mu   sync.Mutex // serialises saves
}

func emptyRules() *Rules { return &Rules{Version: 1, Targets: map[string]*Rule{}} }

// load reads the rules file; a missing file is no rules.
func (s *ruleStore) load() (*Rules, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return emptyRules(), nil
	}
	if err != nil {
		return nil, err
	}
	rs, err := decodeRules(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	return rs, nil
}

func (s *ruleStore) get() *Rules {
	if r := s.cur.Load(); r != nil {
		return r
	}
	return emptyRules()
}

// save persists rs and puts it in force. check runs under the save lock.
func (s *ruleStore) save(rs *Rules, check func(*Rules) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked(rs, check)
}

// update derives new rules from the ones in force and saves them, under the save
// lock, so two concurrent edits of different targets both survive.
func (s *ruleStore) update(f func(cur *Rules) *Rules, check func(*Rules) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked(f(s.get()), check)
}

func (s *ruleStore) saveLocked(rs *Rules, check func(*Rules) error) error {
	if err := check(rs); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	if s.path != "" {
		if err := fsutil.WriteFileAtomic(s.path, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("push rules: %w", err)
		}
		_ = fsutil.SyncDir(filepath.Dir(s.path)) // the rename survives a crash
	}
	s.cur.Store(rs)
	return nil
}

// decodeRules reads a rules document strictly: unknown fields are errors.
func decodeRules(r *bytes.Reader) (*Rules, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var rs Rules
	if err := dec.Decode(&rs); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRules, err)
	}
	if rs.Version == 0 {
		rs.Version = 1
	}
	if rs.Version != 1 {
		return nil, fmt.Errorf("%w: version %d, want 1", ErrInvalidRules, rs.Version)
	}
	if rs.Targets == nil {
		rs.Targets = map[string]*Rule{}
	}
	return &rs, nil
}

// ruleFor returns the rule of a target in rs (nil when none).
func (rs *Rules) ruleFor(target string) *Rule {
	if rs == nil || target == "" {
		return nil
	}
	return rs.Targets[target]
}
