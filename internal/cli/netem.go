package cli

import (
	"context"
	"errors"
	"io"
)

// Netem is not built yet.
func Netem(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("streambed netem: not implemented yet")
}
