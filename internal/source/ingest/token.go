package ingest

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

// TokenFile is where the generated token of an ingest channel is kept, under the
// origin's data folder.
func TokenFile(dataDir, channel string) string {
	return filepath.Join(dataDir, "ingest", channel+".token")
}

// LoadOrCreateToken returns the token of ingest channel channel kept in dataDir, or
// generates one (32 random bytes, URL-safe base64) and keeps it there, readable by
// the owner only, so it stays the same across restarts.
func LoadOrCreateToken(dataDir, channel string) (string, error) {
	if !media.ValidName(channel) {
		return "", fmt.Errorf("ingest token: bad channel name %q: %w", channel, media.ErrBadRequest)
	}
	path := TokenFile(dataDir, channel)
	if tok, err := readToken(path); err != nil || tok != "" {
		return tok, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("ingest token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("ingest token: %w", err)
	}
	// O_EXCL: two origins starting on one data folder agree on the first one's token.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if tok, err := readToken(path); err != nil || tok != "" {
			return tok, err
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600) // an empty file a crash left
	}
	if err != nil {
		return "", fmt.Errorf("ingest token: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("ingest token: %w", err)
	}
	return tok, nil
}

// readToken reads a kept token: "" when there is none.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ingest token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
