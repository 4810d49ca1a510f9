// Package fsutil holds the one way Streambed writes files and folders: atomically,
// through a temporary in the same folder renamed into place. It is the only place
// that renames for that.
package fsutil

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WriteFileAtomic writes b to path through a temporary file in the same folder, synced
// and renamed into place, so a crash or a full disk never leaves a half-written file:
// readers see the old file or the new one. It creates the folder if needed.
func WriteFileAtomic(path string, b []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// WriteJSONAtomic writes v as indented JSON (two spaces, a final newline) to path with
// WriteFileAtomic.
func WriteJSONAtomic(path string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), perm)
}

// SyncDir flushes a folder's entries to disk, so that a rename into it (a file that
// WriteFileAtomic put in place) survives a crash of the machine.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReplaceDir moves the finished folder tmp to dst, replacing an older dst: the old one
// is renamed aside first (DST.old-N) and removed only once the new one is in place, so
// dst is never half-written; if the new one cannot be moved in, the old one is put
// back. tmp and dst must be on the same file system (make tmp beside dst).
func ReplaceDir(tmp, dst string) error {
	old := ""
	if _, err := os.Stat(dst); err == nil {
		old = fmt.Sprintf("%s.old-%d", dst, time.Now().UnixNano())
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("move the old %s aside: %w", dst, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if old != "" {
			_ = os.Rename(old, dst)
		}
		return fmt.Errorf("move %s into %s: %w", tmp, dst, err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("remove the old %s: %w", old, err)
		}
	}
	return nil
}
