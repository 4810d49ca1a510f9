package cli

import (
	"context"
	"errors"
	"io"
)

// Package is not built yet.
func Package(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("streambed package: not implemented yet")
}
