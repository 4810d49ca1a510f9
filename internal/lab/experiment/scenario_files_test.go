package experiment

import (
	"path/filepath"
	"testing"
)

// Every scenario in experiments/ loads and validates: a typo in a file fails here,
// not an hour into a run.
func TestScenarioFilesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "experiments", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files found: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "h2push-pageload.yaml" {
			continue // the h2pushlab page-load program's file, not a player scenario
		}
		s, err := LoadScenario(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if _, err := s.CellProfile(Cell{}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for _, c := range s.Cells() {
			if _, err := s.CellProfile(c); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
}
