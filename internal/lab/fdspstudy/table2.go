package main

import (
	"context"
	"fmt"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
)

func table2(ctx context.Context, c config, bitrates []int) error {
	return fmt.Errorf("table 2: not yet")
}

var _ = hub.New
var _ = netem.Up
var _ = time.Second
