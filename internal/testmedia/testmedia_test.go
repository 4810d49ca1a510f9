package testmedia

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

func TestAsset(t *testing.T) {
	dir := Asset(t)
	a, err := media.LoadAsset(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "test" || a.DurationMS != 8000 || len(a.Tracks) != 3 {
		t.Errorf("asset %s: %d ms, %d tracks", a.Name, a.DurationMS, len(a.Tracks))
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if rel, err := filepath.Rel(root, dir); err != nil || filepath.Dir(filepath.Dir(rel)) != filepath.Join(".cache", "testmedia") {
		t.Errorf("asset in %s, want under <repo>/.cache/testmedia", dir)
	}
	if again := Asset(t); again != dir {
		t.Errorf("second call gave %s", again)
	}
}

// Parallel packagers of one asset (as from parallel test binaries: flock locks
// conflict between separate opens even in one process) package it exactly once.
func TestBuildOnceUnderContention(t *testing.T) {
	root := t.TempDir()
	o := Options{Duration: 8 * time.Second, Ladder: "180p:100k", AudioBitrate: 32000}.withDefaults()
	var wg sync.WaitGroup
	var mu sync.Mutex
	packaged := 0
	dirs := map[string]bool{}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, did, err := build(root, o.key(), o)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			dirs[dir] = true
			if did {
				packaged++
			}
		}()
	}
	wg.Wait()
	if packaged != 1 || len(dirs) != 1 {
		t.Errorf("packaged %d times into %d folders, want once into one", packaged, len(dirs))
	}
}
