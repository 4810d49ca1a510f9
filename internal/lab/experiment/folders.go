package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultResultsDir is where a scenario's results go when no output folder is given:
// lab-results/NAME.
const DefaultResultsDir = "lab-results"

// Folders turns a lab program's --out and --cache flags into the folders it uses, the
// same way for `streambed lab run` and the studies in internal/lab: an empty out is
// lab-results/NAME, both become absolute (the origin and players run elsewhere), and
// the output folder is created. An empty cache stays empty.
func Folders(out, cache, name string) (outDir, cacheDir string, err error) {
	if out == "" {
		out = filepath.Join(DefaultResultsDir, name)
	}
	if outDir, err = filepath.Abs(out); err != nil {
		return "", "", err
	}
	if cache != "" {
		if cacheDir, err = filepath.Abs(cache); err != nil {
			return "", "", err
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", "", err
	}
	return outDir, cacheDir, nil
}

// NewResults starts the results of a run of s (nil for a study without one scenario):
// the start time, this machine and the command line.
func NewResults(s *Scenario) *Results {
	r := &Results{Scenario: s, Started: time.Now().UTC(), Command: strings.Join(os.Args, " ")}
	r.Host, _ = os.Hostname()
	return r
}
