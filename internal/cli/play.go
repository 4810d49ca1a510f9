package cli

import (
	"context"
	"errors"
	"io"
)

// Play is not built yet.
func Play(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("streambed play: not implemented yet")
}
