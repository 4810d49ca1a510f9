package cli

import (
	"context"
	"errors"
	"io"
)

// Lab is not built yet.
func Lab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("streambed lab: not implemented yet")
}
