package fsutil

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadOrCreateToken returns the secret token kept in the file at path, or generates
// one (32 random bytes, URL-safe base64) and keeps it there, readable by the owner
// only, so it stays the same across restarts (like a generated TLS certificate).
func LoadOrCreateToken(path string) (string, error) {
	if tok, err := readToken(path); err != nil || tok != "" {
		return tok, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	// O_EXCL: two processes starting on one data folder agree on the first one's token.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if tok, err := readToken(path); err != nil || tok != "" {
			return tok, err
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600) // an empty file a crash left
	}
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return tok, nil
}

// ReadToken reads a kept token: "" when there is none.
func ReadToken(path string) (string, error) { return readToken(path) }

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("token %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}
