package cli

import (
	"context"
	"errors"
	"io"
)

// Serve is not built yet.
func Serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("streambed serve: not implemented yet")
}
