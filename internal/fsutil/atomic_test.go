package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b.txt")
	if err := WriteFileAtomic(p, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("two"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "two" || fi.Mode().Perm() != 0o640 {
		t.Errorf("content %q mode %v", b, fi.Mode())
	}
	// A target that cannot be replaced (a folder) fails and leaves no temporary file.
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "d"), []byte("x"), 0o644); err == nil {
		t.Error("replacing a folder succeeded")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "a" && e.Name() != "d" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestWriteJSONAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.json")
	if err := WriteJSONAtomic(p, map[string]int{"a": 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "{\n  \"a\": 1\n}\n" {
		t.Errorf("wrote %q", b)
	}
	if err := WriteJSONAtomic(p, func() {}, 0o644); err == nil {
		t.Error("a function marshalled")
	}
	if err := SyncDir(filepath.Dir(p)); err != nil {
		t.Error(err)
	}
	if err := SyncDir(filepath.Join(p, "nope")); err == nil {
		t.Error("synced a missing folder")
	}
}

func TestReplaceDir(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "asset")
	fill := func(name, content string) string {
		tmp, err := os.MkdirTemp(dir, "asset.tmp-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return tmp
	}
	// A new folder, then a replacement: the old files go, nothing is left beside it.
	if err := ReplaceDir(fill("a", "one"), dst); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceDir(fill("b", "two"), dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "a")); err == nil {
		t.Error("old file still there")
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "b")); string(b) != "two" {
		t.Errorf("new file %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left beside it: %v", entries)
	}
	// A missing source fails and puts the old folder back.
	if err := ReplaceDir(filepath.Join(dir, "missing"), dst); err == nil {
		t.Error("replaced with a missing folder")
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "b")); string(b) != "two" {
		t.Errorf("old folder not restored: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left beside it: %v", entries)
	}
}
