// Package fsutil holds the one way Streambed writes files: atomically.
package fsutil

import (
	"os"
	"path/filepath"
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
