package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFolders(t *testing.T) {
	t.Chdir(t.TempDir())
	out, cache, err := Folders("", filepath.Join(".cache", "c"), "smoke")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if out != filepath.Join(wd, DefaultResultsDir, "smoke") || cache != filepath.Join(wd, ".cache", "c") {
		t.Errorf("out %s cache %s", out, cache)
	}
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		t.Errorf("output folder not created: %v", err)
	}
	if _, err := os.Stat(cache); err == nil {
		t.Error("the cache folder is the packager's to create")
	}
	out, cache, err = Folders("given", "", "smoke")
	if err != nil || out != filepath.Join(wd, "given") || cache != "" {
		t.Errorf("out %s cache %q err %v", out, cache, err)
	}
}

func TestNewResults(t *testing.T) {
	s := &Scenario{Name: "x"}
	r := NewResults(s)
	if r.Scenario != s || r.Started.IsZero() || r.Command == "" {
		t.Errorf("%+v", r)
	}
}
