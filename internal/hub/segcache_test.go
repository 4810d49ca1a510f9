package hub

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/streambed/streambed/internal/fsutil"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

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

// A file replaced on disk by rename (a new inode, here with the same size and
// modification time) is seen at the next look: the cache answers with the new file's
// validators and descriptors, while a descriptor borrowed before still reads the old
// file whole; the old file's descriptors are closed once returned.
func TestFileCacheSeesReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.m4s")
	must(t, os.WriteFile(path, []byte("old-segment"), 0o644))
	c := NewFileCache(16)
	c.SetValidFor(0) // look at every Get
	old, err := c.Get(path)
	must(t, err)
	borrowed, err := old.OpenAt()
	must(t, err)
	idle, err := old.OpenAt()
	must(t, err)
	old.Release(idle)

	mod := old.ModTime
	must(t, fsutil.WriteFileAtomic(path, []byte("new-segment"), 0o644))
	must(t, os.Chtimes(path, mod, mod))
	cur, err := c.Get(path)
	must(t, err)
	if cur == old {
		t.Fatal("Get returned the replaced file")
	}
	fd, err := cur.OpenAt()
	must(t, err)
	if b := readAll(t, fd, cur.Size); b != "new-segment" {
		t.Errorf("after the replacement: %q, want the new file", b)
	}
	cur.Release(fd)
	if b := readAll(t, borrowed, old.Size); b != "old-segment" {
		t.Errorf("descriptor borrowed before the replacement: %q, want the old file whole", b)
	}
	old.Release(borrowed)
	if n := c.Open(); n != 1 {
		t.Errorf("%d descriptors held, want 1 (the new file's; the old one's closed)", n)
	}
	if again, _ := c.Get(path); again != cur {
		t.Errorf("an unchanged file was cached again")
	}
}

// A file replaced between Get and the opening of a new descriptor is not served
// under the old file's size and validators: ErrReplaced, and the next Get looks
// at the path at once (however recently it looked).
func TestFileCacheReplacedBeforeOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.m4s")
	must(t, os.WriteFile(path, []byte("short"), 0o644))
	c := NewFileCache(16) // looks again only after a second
	old, err := c.Get(path)
	must(t, err)
	must(t, fsutil.WriteFileAtomic(path, []byte("a longer segment"), 0o644))
	if fd, err := old.OpenAt(); !errors.Is(err, ErrReplaced) {
		t.Fatalf("OpenAt of a replaced file: %v %v, want ErrReplaced", fd, err)
	}
	if _, err := old.Open(); !errors.Is(err, ErrReplaced) {
		t.Fatalf("Open of a replaced file: %v, want ErrReplaced", err)
	}
	cur, err := c.Get(path)
	must(t, err)
	if cur == old || cur.Size != int64(len("a longer segment")) || cur.ETag == old.ETag {
		t.Fatalf("Get after ErrReplaced: size %d ETag %s (old %s), want the new file", cur.Size, cur.ETag, old.ETag)
	}
	fd, err := cur.OpenAt()
	must(t, err)
	defer cur.Release(fd)
	if b := readAll(t, fd, cur.Size); b != "a longer segment" {
		t.Errorf("%q, want the new file", b)
	}
	if c.Open() != 1 {
		t.Errorf("%d descriptors held, want 1", c.Open())
	}
}

// A removed file is an error at the next look, not an answer from the old descriptor.
func TestFileCacheRemovedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.m4s")
	must(t, os.WriteFile(path, []byte("x"), 0o644))
	c := NewFileCache(16)
	c.SetValidFor(0)
	f, err := c.Get(path)
	must(t, err)
	fd, err := f.OpenAt()
	must(t, err)
	f.Release(fd)
	must(t, os.Remove(path))
	if _, err := c.Get(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Get of a removed file: %v, want not found", err)
	}
	if c.Open() != 0 {
		t.Errorf("%d descriptors held after the file went, want 0", c.Open())
	}
}

func readAll(t *testing.T, fd *os.File, n int64) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := fd.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return string(b)
}
