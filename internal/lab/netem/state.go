package netem

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
)

// DefaultStateDir holds run records and the CLI's network state.
const DefaultStateDir = "/run/streambed-netem"

// runRecord is written before a run creates anything, so a later run can remove what
// a crashed one left behind, and only that.
type runRecord struct {
	ID         string    `json:"id"`
	PID        int       `json:"pid"`
	PIDStart   uint64    `json:"pid_start"`
	Name       string    `json:"name,omitempty"`
	Namespaces []string  `json:"namespaces"`
	Created    time.Time `json:"created"`
}

func runsDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func namespaceName(id, host string) string { return NamespacePrefix + id + "-" + host }

func writeRecord(stateDir string, r runRecord) error {
	if err := os.MkdirAll(runsDir(stateDir), 0o755); err != nil {
		return err
	}
	return fsutil.WriteJSONAtomic(filepath.Join(runsDir(stateDir), r.ID+".json"), r, 0o644)
}

func removeRecord(stateDir, id string) {
	_ = os.Remove(filepath.Join(runsDir(stateDir), id+".json"))
}

// CleanStale removes the namespaces of runs whose owning process has died (a crash,
// a kill -9) and their records. Runs whose owner still lives are left alone, as is
// every namespace this package has no record of. It returns the namespaces removed.
func CleanStale(stateDir string, log *slog.Logger) ([]string, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ents, err := os.ReadDir(runsDir(stateDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(runsDir(stateDir), e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil || r.ID == "" {
			if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > time.Minute {
				_ = os.Remove(path) // unreadable and old: not being written
			}
			continue
		}
		if alive(r.PID, r.PIDStart) {
			continue
		}
		names := append([]string(nil), r.Namespaces...)
		// Namespaces named with this run's id are this run's, listed or not.
		if more, _ := filepath.Glob(filepath.Join(netnsDir, NamespacePrefix+r.ID+"-*")); len(more) > 0 {
			for _, m := range more {
				names = append(names, filepath.Base(m))
			}
		}
		ok := true
		seen := map[string]bool{}
		for _, ns := range names {
			if seen[ns] || !strings.HasPrefix(ns, NamespacePrefix+r.ID+"-") {
				continue
			}
			seen[ns] = true
			if !namespaceExists(ns) {
				continue
			}
			if err := deleteNamespace(ns); err != nil {
				errs = append(errs, err)
				ok = false
				continue
			}
			removed = append(removed, ns)
		}
		if ok {
			log.Info("removed stale netem run", "id", r.ID, "pid", r.PID, "namespaces", len(seen))
			_ = os.Remove(path)
		}
	}
	return removed, errors.Join(errs...)
}

// ensureRoot fails early with a clear message when namespaces cannot be made.
func ensureRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	return nil
}
