package h2push

import (
	"bytes"
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/transport"
)

//go:embed admin.html
var adminPage []byte

// Attach wires HTTP/2 push into the origin: the strategies around the pull routes and
// the rules page with its API at /admin/push. The origin's data folder holds the rules
// file unless the configuration names one.
func Attach(_ context.Context, h transport.Host, cfg Config) (*Pusher, error) {
	path := cfg.Rules
	if path == "" {
		path = filepath.Join(h.DataDir(), "h2push", "rules.json")
	}
	log := h.Log().With("transport", "h2push")
	p, err := New(Options{Hub: h.Hub(), Config: cfg, RulesPath: path, PageFS: h.PageFS(), Log: log})
	if err != nil {
		return nil, fmt.Errorf("h2push: %w", err)
	}
	h.Use(p.Wrap)
	p.Routes(h.Handle)
	return p, nil
}

// Routes registers the admin page and its API:
//
//	GET    /admin/push                       the rules page (?token=TOKEN)
//	GET    /admin/push/api/targets           the page, assets and channels, with their rules
//	GET    /admin/push/api/resources?target= what can be pushed for a target, and its rule
//	GET    /admin/push/api/rules             all rules
//	PUT    /admin/push/api/rules             replace all rules
//	PUT    /admin/push/api/rule?target=      set one target's rule
//	DELETE /admin/push/api/rule?target=      remove one target's rule
//	GET    /admin/push/api/stats             push counters
//
// Every route needs the admin token (Authorization: Bearer TOKEN, or ?token=).
func (p *Pusher) Routes(handle func(pattern string, h http.Handler)) {
	handle("GET /admin/push", p.auth(http.HandlerFunc(p.servePage)))
	api := p.auth(http.HandlerFunc(p.serveAPI))
	handle("GET /admin/push/api/", api)
	handle("PUT /admin/push/api/", api)
	handle("DELETE /admin/push/api/", api)
}

// auth answers 401 unless the request carries the configured token.
func (p *Pusher) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if p.cfg.AdminToken == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="streambed push rules"`)
			httperr.Write(w, httperr.WithStatus(http.StatusUnauthorized, errors.New("the push rules page is off: set h2push.admin_token in the configuration")))
			return
		}
		got := r.URL.Query().Get("token")
		if a := r.Header.Get("Authorization"); a != "" {
			got, _ = strings.CutPrefix(a, "Bearer ")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(p.cfg.AdminToken)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="streambed push rules"`)
			httperr.Write(w, httperr.WithStatus(http.StatusUnauthorized, errors.New("missing or wrong admin token (Authorization: Bearer TOKEN, or ?token=TOKEN)")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *Pusher) servePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	h.Set("Referrer-Policy", "no-referrer") // the token is in the URL
	_, _ = w.Write(adminPage)
}

// targetJSON is one entry of /admin/push/api/targets.
type targetJSON struct {
	Target string `json:"target"`
	Kind   string `json:"kind"` // page, asset, channel
	Rule   *Rule  `json:"rule,omitempty"`
}

func (p *Pusher) serveAPI(w http.ResponseWriter, r *http.Request) {
	rules := p.rules.get()
	target := r.URL.Query().Get("target")
	switch op := r.Method + " " + strings.TrimPrefix(r.URL.Path, "/admin/push/api/"); op {
	case "GET targets":
		list := []targetJSON{{Target: PageTarget, Kind: "page", Rule: rules.ruleFor(PageTarget)}}
		for _, a := range p.hub.Assets() {
			t := "vod/" + a.Info().Name
			list = append(list, targetJSON{Target: t, Kind: "asset", Rule: rules.ruleFor(t)})
		}
		for _, c := range p.hub.Channels() {
			t := "live/" + c.Info().Name
			list = append(list, targetJSON{Target: t, Kind: "channel", Rule: rules.ruleFor(t)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"targets": list, "default": p.cfg.Default.String(),
			"strategies": []string{"none", "all", "init", "init-first", "audio", "k2", "k3", "k5", "k10"}})
	case "GET resources":
		res, err := p.Discover(target)
		if err != nil {
			httperr.Write(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"target": target, "resources": res, "rule": rules.ruleFor(target)})
	case "GET rules":
		writeJSON(w, http.StatusOK, rules)
	case "GET stats":
		writeJSON(w, http.StatusOK, map[string]any{"server": p.Stats(), "connections": p.conns.len(), "sessions": p.sessions.len()})
	case "PUT rules":
		b, err := readBody(r)
		if err != nil {
			httperr.Write(w, httperr.WithStatus(http.StatusBadRequest, err))
			return
		}
		rs, err := decodeRules(bytes.NewReader(b))
		if err == nil {
			err = p.SaveRules(rs)
		}
		p.answerSave(w, r, err)
	case "PUT rule", "DELETE rule":
		if target == "" {
			httperr.Write(w, httperr.WithStatus(http.StatusBadRequest, errors.New("?target= is required (page:/, vod/ASSET or live/CHANNEL)")))
			return
		}
		var rule *Rule
		if r.Method == http.MethodPut {
			b, err := readBody(r)
			if err != nil {
				httperr.Write(w, httperr.WithStatus(http.StatusBadRequest, err))
				return
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			rule = &Rule{}
			if err := dec.Decode(rule); err != nil {
				httperr.Write(w, httperr.WithStatus(http.StatusBadRequest, fmt.Errorf("%w: %w", ErrInvalidRules, err)))
				return
			}
		}
		err := p.rules.update(func(cur *Rules) *Rules {
			next := &Rules{Version: 1, Targets: make(map[string]*Rule, len(cur.Targets)+1)}
			for k, v := range cur.Targets {
				next.Targets[k] = v
			}
			if rule == nil {
				delete(next.Targets, target)
			} else {
				next.Targets[target] = rule
			}
			return next
		}, p.validate)
		p.answerSave(w, r, err)
	default:
		httperr.Write(w, httperr.WithStatus(http.StatusNotFound, fmt.Errorf("no API %s %s", r.Method, r.URL.Path)))
	}
}

func (p *Pusher) answerSave(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		if errors.Is(err, ErrInvalidRules) {
			err = httperr.WithStatus(http.StatusBadRequest, err)
		} else {
			p.log.Error("saving push rules", "err", err)
		}
		httperr.Write(w, err)
		return
	}
	p.log.Info("push rules saved", "from", r.RemoteAddr, "targets", len(p.rules.get().Targets))
	writeJSON(w, http.StatusOK, p.rules.get())
}

// maxRulesBody bounds a rules document.
const maxRulesBody = 1 << 20

func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRulesBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRulesBody {
		return nil, fmt.Errorf("%w: document larger than %d bytes", ErrInvalidRules, maxRulesBody)
	}
	return b, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
