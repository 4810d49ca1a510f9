// Package testmedia gives tests a real packaged asset, made once by FFmpeg and cached.
//
// Asset(t) packages a small synthetic asset (8 s, 2 s segments, 180p:100k and
// 360p:400k H.264 plus 64 kbit/s AAC, x264 ultrafast) into
// <repo>/.cache/testmedia/<key>/asset the first time any test asks for it, and
// returns that folder. Test binaries running in parallel share it: a file lock makes
// one of them package while the others wait. Later runs reuse the folder (the
// packager's own fingerprint check), so the cost is paid once per machine.
//
// FFmpeg is required: a missing FFmpeg fails the test with instructions rather than
// skipping it, so CI never passes silently without its media tests.
package testmedia

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/source/pkg"
)

// Options shape a test asset; zero fields take the defaults of Asset.
type Options struct {
	Duration        time.Duration // default 8 s (one loop period at 2 s segments)
	SegmentDuration time.Duration // default 2 s
	Ladder          string        // default "180p:100k,360p:400k"
	AudioBitrate    int           // bit/s, default 64000; negative: no audio
	FPS             int           // default 25
	Preset          string        // default "ultrafast"
}

func (o Options) withDefaults() Options {
	if o.Duration == 0 {
		o.Duration = 8 * time.Second
	}
	if o.SegmentDuration == 0 {
		o.SegmentDuration = 2 * time.Second
	}
	if o.Ladder == "" {
		o.Ladder = "180p:100k,360p:400k"
	}
	if o.AudioBitrate == 0 {
		o.AudioBitrate = 64000
	}
	if o.FPS == 0 {
		o.FPS = 25
	}
	if o.Preset == "" {
		o.Preset = "ultrafast"
	}
	return o
}

// key names the cache folder of an option set.
func (o Options) key() string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%d|%d|%s", o.Duration, o.SegmentDuration, o.Ladder, o.AudioBitrate, o.FPS, o.Preset)))
	return hex.EncodeToString(h[:])[:16]
}

var (
	mu   sync.Mutex
	done = map[string]string{} // key → asset folder, packaged or verified in this process
)

// Asset returns the folder of the default test asset, packaging it if needed.
func Asset(t testing.TB) string { return AssetWith(t, Options{}) }

// AssetWith returns the folder of a test asset made with o, packaging it if needed.
// The asset is named "test".
func AssetWith(t testing.TB, o Options) string {
	t.Helper()
	dir, err := Build(o)
	if err != nil {
		if errors.Is(err, pkg.ErrFFmpegMissing) {
			t.Fatalf("testmedia: %v — the tests generate their media with FFmpeg; `make test` installs it", err)
		}
		t.Fatalf("testmedia: packaging the test asset failed: %v", err)
	}
	return dir
}

// Build is AssetWith for programs (the lab tools that run the tests' set-ups): it
// returns the folder of the asset made with o, packaging it under the repository's
// .cache if needed.
func Build(o Options) (string, error) {
	o = o.withDefaults()
	key := o.key()
	mu.Lock()
	defer mu.Unlock()
	if dir, ok := done[key]; ok {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("testmedia: %w", err)
	}
	dir, _, err := build(root, key, o)
	if err != nil {
		return "", err
	}
	done[key] = dir
	return dir, nil
}

// build packages (or reuses) the asset under an exclusive lock shared by every
// process on the machine; packaged says whether this call did the work.
func build(root, key string, o Options) (dir string, packaged bool, err error) {
	cache := filepath.Join(root, ".cache", "testmedia", key)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", false, err
	}
	lock, err := os.OpenFile(filepath.Join(cache, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", false, err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", false, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	ladder, err := pkg.ParseLadder(o.Ladder)
	if err != nil {
		return "", false, err
	}
	dir = filepath.Join(cache, "asset")
	// Under the lock no one else is packaging here: whatever a killed run left beside
	// the asset can go.
	for _, pattern := range []string{dir + ".tmp-*", dir + ".old-*"} {
		stale, _ := filepath.Glob(pattern)
		for _, s := range stale {
			os.RemoveAll(s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := pkg.Package(ctx, pkg.Options{
		Synthetic:       o.Duration,
		OutDir:          dir,
		Name:            "test",
		SegmentDuration: o.SegmentDuration,
		Ladder:          ladder,
		AudioBitrate:    o.AudioBitrate,
		FPS:             o.FPS,
		Preset:          o.Preset,
	})
	if err != nil {
		return "", false, err
	}
	return dir, !res.UpToDate, nil
}

// RepoRoot finds the module root: the nearest folder above the working directory
// that holds go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
