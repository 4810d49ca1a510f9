package ingest

import (
	"fmt"
	"path/filepath"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/media"
)

// TokenFile is where the generated token of an ingest channel is kept, under the
// origin's data folder.
func TokenFile(dataDir, channel string) string {
	return filepath.Join(dataDir, "ingest", channel+".token")
}

// LoadOrCreateToken returns the token of ingest channel channel kept in dataDir, or
// generates one and keeps it there (fsutil.LoadOrCreateToken), so it stays the same
// across restarts.
func LoadOrCreateToken(dataDir, channel string) (string, error) {
	if !media.ValidName(channel) {
		return "", fmt.Errorf("ingest token: bad channel name %q: %w", channel, media.ErrBadRequest)
	}
	tok, err := fsutil.LoadOrCreateToken(TokenFile(dataDir, channel))
	if err != nil {
		return "", fmt.Errorf("ingest %w", err)
	}
	return tok, nil
}
