package pars

import (
	"fmt"
	"testing"
)

// BodyBytes counts every body byte received, whether or not the player has been
// handed its segment yet: one segment at a time it is the payload handed over;
// pipelined, the payload handed over plus what was fetched ahead, never less.
func TestBodyBytes(t *testing.T) {
	sizes := []int{300_001, 250_000, 200_000, 150_000, 100_000}
	for _, pipelined := range []bool{false, true} {
		t.Run(fmt.Sprintf("pipelined=%v", pipelined), func(t *testing.T) {
			o, s := newTestOrigin(t, sizes...)
			o.index = true
			c := newTestClient(t, 3, func(o *Options) { o.NoPipeline = !pipelined })
			var payload int64
			for i := range 3 {
				payload += fetchSeg(t, c, s, i+1).PayloadBytes
			}
			got := c.BodyBytes()
			switch {
			case !pipelined && got != payload:
				t.Fatalf("one segment at a time: BodyBytes %d, payload handed over %d", got, payload)
			case got < payload:
				t.Fatalf("BodyBytes %d < payload handed over %d", got, payload)
			}
			var all int64
			for _, n := range sizes {
				all += int64(n)
			}
			if got > all {
				t.Fatalf("BodyBytes %d > all the segments' bytes %d", got, all)
			}
		})
	}
}
