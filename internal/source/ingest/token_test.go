package ingest

import (
	"os"
	"testing"
)

func TestLoadOrCreateToken(t *testing.T) {
	dir := t.TempDir()
	tok, err := LoadOrCreateToken(dir, "news")
	if err != nil || len(tok) != 43 {
		t.Fatalf("token %q, %v", tok, err)
	}
	again, err := LoadOrCreateToken(dir, "news")
	if err != nil || again != tok {
		t.Errorf("a restart got %q, want the kept %q", again, tok)
	}
	fi, err := os.Stat(TokenFile(dir, "news"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %v %v: want mode 0600", fi.Mode(), err)
	}
	if other, _ := LoadOrCreateToken(dir, "sports"); other == tok || other == "" {
		t.Errorf("another channel's token %q", other)
	}
	// An empty file (a crash between create and write) is replaced.
	if err := os.WriteFile(TokenFile(dir, "news"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if fresh, err := LoadOrCreateToken(dir, "news"); err != nil || len(fresh) != 43 {
		t.Errorf("after an empty file: %q %v", fresh, err)
	}
	if _, err := LoadOrCreateToken(dir, "../x"); err == nil {
		t.Error("a path as a channel name")
	}
}
