package encoder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/source/looplive"
)

// ReplayOptions configure Replay.
type ReplayOptions struct {
	Base   string // the channel's ingest URL
	Token  string // Authorization: Bearer TOKEN; "" sends none
	Client *http.Client
	// ChunkDuration splits segments into chunks posted as they are due (one frame for
	// low latency); 0 posts each segment whole when it is complete.
	ChunkDuration time.Duration
	Clock         hub.Clock // nil: time.Now
	// Progress, when set, is called after each segment of the first track is posted.
	Progress func(ReplayProgress)
}

// ReplayProgress is how far a replay has come.
type ReplayProgress struct {
	Segments int   // complete segments of the first track posted
	Bytes    int64 // bytes posted on all tracks
	Number   uint64
}

// Replay posts asset a as a live encoder would: one long-running POST per track,
// the init segment first, then every chunk when its media time has passed, its
// timestamps rewritten so media time is time since the Unix epoch (the asset looped
// forever, as a looped channel plays it). It runs until ctx ends or a POST fails.
//
// It is a looped channel's source feeding a private hub channel, whose chunks are
// forwarded to the POSTs: the bytes posted are the bytes a looped channel serves.
func Replay(ctx context.Context, a *hub.Asset, o ReplayOptions) error {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	c, src, err := looplive.NewChannel(a, looplive.ChannelOptions{
		Name: "replay", ChunkDuration: o.ChunkDuration, AvailabilityStart: time.Unix(0, 0).UTC(), Clock: o.Clock,
		DVRWindow: 3 * a.Info().SegmentDuration,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The POSTs outlive ctx by a moment: at the end their bodies are closed, so the
	// origin sees a clean end of stream, before they are cancelled.
	reqCtx, reqCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer reqCancel()
	tracks := a.Info().Tracks
	// A generous queue: a POST that cannot keep up loses chunks up to the next
	// keyframe, as a real encoder on a slow network would.
	sub := c.Subscribe(64 * len(tracks))
	defer sub.Stop()

	type post struct {
		w    *io.PipeWriter
		done chan error
	}
	posts := map[string]*post{}
	var wg sync.WaitGroup
	for _, t := range tracks {
		init, err := a.Init(t.ID)
		if err != nil {
			return err
		}
		pr, pw := io.Pipe()
		ext := ".cmfv"
		if t.Kind == media.Audio {
			ext = ".cmfa"
		}
		req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, TrackURL(o.Base, t.ID+ext), pr)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", t.MimeType())
		if o.Token != "" {
			req.Header.Set("Authorization", "Bearer "+o.Token)
		}
		p := &post{w: pw, done: make(chan error, 1)}
		posts[t.ID] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := o.Client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				if resp.StatusCode >= 300 {
					err = fmt.Errorf("ingest answered %s for track %s", resp.Status, t.ID)
				}
			}
			_ = pr.CloseWithError(err)
			p.done <- err
			cancel()
		}()
		if _, err := pw.Write(init); err != nil {
			cancel()
			reqCancel()
			wg.Wait()
			return postError(t.ID, p.done, err)
		}
	}
	srcDone := make(chan error, 1)
	go func() { srcDone <- src.Run(ctx, c) }()

	var st ReplayProgress
	first := tracks[0].ID
	var failed error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case ev, ok := <-sub.C:
			if !ok {
				break loop
			}
			if ev.Chunk == nil {
				continue
			}
			p := posts[ev.Track]
			if _, err := p.w.Write(ev.Chunk.Data); err != nil {
				failed = postError(ev.Track, p.done, err)
				break loop
			}
			st.Bytes += int64(len(ev.Chunk.Data))
			if ev.Track == first && ev.Last {
				st.Segments++
				st.Number = ev.Number
				if o.Progress != nil {
					o.Progress(st)
				}
			}
		}
	}
	cancel()
	<-srcDone
	for _, p := range posts {
		_ = p.w.Close()
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		reqCancel()
		<-waited
	}
	if failed == nil {
		for id, p := range posts {
			select {
			case err := <-p.done:
				if err != nil && !errors.Is(err, context.Canceled) {
					failed = postError(id, nil, err)
				}
			default:
			}
			if failed != nil {
				break
			}
		}
	}
	return failed
}

// postError says why posting a track stopped, preferring the POST's own error.
func postError(track string, done <-chan error, err error) error {
	if done != nil {
		select {
		case e := <-done:
			if e != nil {
				err = e
			}
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("encoder: track %s: %w", track, err)
}
