package hub

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A descriptor borrowed with OpenAt is not moved to the start (reads at offsets do
// not need it); one borrowed with Open is, whatever the last borrower left.
func TestFileCacheOpenAtAndOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.m4s")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewFileCache(4)
	f, err := c.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size != 10 || f.ETag == "" {
		t.Fatalf("size %d, ETag %q", f.Size, f.ETag)
	}
	fd, err := f.OpenAt()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	if _, err := fd.ReadAt(b, 4); err != nil || string(b) != "456" {
		t.Fatalf("ReadAt: %q %v", b, err)
	}
	if _, err := fd.Seek(7, io.SeekStart); err != nil { // as a sequential reader leaves it
		t.Fatal(err)
	}
	f.Release(fd)
	if c.Open() != 1 {
		t.Errorf("%d descriptors held, want 1", c.Open())
	}
	again, err := f.OpenAt()
	if err != nil {
		t.Fatal(err)
	}
	if again != fd {
		t.Errorf("OpenAt opened a new descriptor instead of reusing the idle one")
	}
	if pos, _ := again.Seek(0, io.SeekCurrent); pos != 7 {
		t.Errorf("OpenAt moved the position to %d", pos)
	}
	f.Release(again)
	seq, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release(seq)
	if all, err := io.ReadAll(seq); err != nil || string(all) != "0123456789" {
		t.Errorf("Open: read %q %v, want the whole file from the start", all, err)
	}
}
