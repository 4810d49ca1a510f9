package wspush

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// feedAsset streams an on-demand asset from the requested position to its end,
// paced at most Lead ahead of real time.
func (s *session) feedAsset(ctx context.Context, a *hub.Asset) error {
	info := a.Info()
	ref := s.ladder[0]
	segs := ref.Segments
	k := 0
	if s.start.At.Position {
		if s.start.At.Seconds < 0 || s.start.At.Seconds >= info.Duration.Seconds() && info.Duration > 0 {
			return fmt.Errorf("%w: at %v is outside the asset (0 to %.3f s)", ErrStart, s.start.At.Seconds, info.Duration.Seconds())
		}
		at := uint64(s.start.At.Seconds*float64(ref.Timescale) + 0.5)
		for k+1 < len(segs) && segs[k+1].Start-segs[0].Start <= at {
			k++
		}
	}
	pos := func(i int) time.Duration { return ref.Duration(segs[i].Start - segs[0].Start) }
	s.base = segs[k].Number
	if err := s.ready(pos(k), false, time.Time{}, info.Duration); err != nil {
		return err
	}
	tick, stop := s.ticker()
	defer stop()
	t0 := s.opts.Now()
	for i := k; i < len(segs); i++ {
		n := segs[i].Number
		if err := s.pace(ctx, t0.Add(pos(i)-pos(k)-s.opts.Lead), s.opts.Now, tick); err != nil {
			return err
		}
		if _, err := s.holdWhileDraining(ctx, n, s.opts.Now, tick); err != nil {
			return err
		}
		for _, t := range s.tracksNow() {
			seg, err := a.Segment(t.ID, n, s.opts.Now())
			if errors.Is(err, media.ErrNotFound) {
				continue // a shorter track
			}
			if err != nil {
				return err
			}
			for j, ch := range seg.Chunks {
				s.pushChunk(t, n, j, j == len(seg.Chunks)-1, ch)
			}
		}
	}
	return errEnd
}
