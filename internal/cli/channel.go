package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/publish"
	"github.com/streambed/streambed/internal/server"
)

const channelUsage = `Usage: streambed channel create|list|show|delete|clip [flags] [NAME]

Manages the publishing points of a running origin (streambed serve) through its
API /api/channels: live channels that an encoder feeds by DASH-IF ingest.

  create NAME   make a channel; prints its ingest URL and token
  list          every channel, with its state (waiting, live, idle)
  show NAME     one channel, with its tracks
  delete NAME   stop and forget a channel (its archive stays on disk)
  clip NAME --as ASSET --from T --to T
                cut a window of an archived channel into an on-demand asset
                (/vod/ASSET/...); T is RFC 3339 or seconds since the Unix epoch

Presets (the live load tests' use cases; options below override them):
  pure-live     archive 120 s in 60 s archive segments, DVR window 30 s
  archive       archive 24 h in 10 min archive segments, DVR window 30 s
  archive-dvr   archive 24 h in 10 min archive segments, DVR window 1 h

The admin token: --token, else $STREAMBED_ADMIN_TOKEN, else the file admin.token
in the data folder that serve generated (so no flag is needed on the origin's
machine), else admin_token from the serve configuration.

Examples:
  streambed channel create news --preset pure-live
  streambed encode live --to http://127.0.0.1:8080/ingest/news --token TOKEN
  streambed channel create sport --preset archive-dvr --segment 2s --json
  streambed channel list
  streambed channel clip news --as news-0500 --from 2026-11-24T05:00:00Z --to 2026-11-24T05:01:00Z
  streambed channel delete news

Flags:
`

// Channel runs `streambed channel`.
func Channel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("channel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		srv      = fs.String("server", "http://127.0.0.1:8080", "the origin's `URL`")
		token    = fs.String("token", "", "admin `token` (default: $STREAMBED_ADMIN_TOKEN, then DATA_DIR/admin.token)")
		dataDir  = fs.String("data-dir", server.DefaultDataDir(), "the origin's data `folder`, where its admin token is")
		asJSON   = fs.Bool("json", false, "print JSON (create: name, ingest_url, ingest_token, dash, hls)")
		preset   = fs.String("preset", "", "create: `preset` pure-live, archive or archive-dvr")
		archive  = fs.Bool("archive", false, "create: keep segments on disk (archiving)")
		archLen  = fs.String("archive-length", "", "create: prune the archive after `D` (30s, 24h or seconds)")
		archSeg  = fs.String("archive-segment-length", "", "create: group the archive by `D`")
		dvr      = fs.String("dvr", "", "create: DVR window `D` (dvr_window_length)")
		segment  = fs.String("segment", "", "create: the encoder's segment duration `D` (default 2s)")
		delay    = fs.String("delay", "", "create: suggested presentation delay `D`")
		minBuf   = fs.String("min-buffer", "", "create: MPD@minBufferTime `D`")
		address  = fs.String("addressing", "", "create: `time` (SegmentTimeline, default) or number: which MPD is the channel's dash URL")
		restart  = fs.Bool("restart-on-reconnect", false, "create: continue the timeline when an encoder reconnects")
		ingestTk = fs.String("ingest-token", "", "create: the encoder's `token` (default: generated)")
		clipAs   = fs.String("as", "", "clip: the on-demand asset's `name`")
		clipFrom = fs.String("from", "", "clip: start `time` (RFC 3339 or Unix seconds)")
		clipTo   = fs.String("to", "", "clip: end `time` (RFC 3339 or Unix seconds)")
	)
	fs.Usage = func() {
		fmt.Fprint(stderr, channelUsage)
		fs.PrintDefaults()
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := fs.Parse(args); err != nil {
			return err
		}
		fs.Usage()
		return errors.New("channel: say create, list, show, delete or clip")
	}
	verb := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	rest := fs.Args()
	// Flags may also follow NAME.
	if len(rest) > 1 {
		if err := fs.Parse(rest[1:]); err != nil {
			return err
		}
		rest = append(rest[:1], fs.Args()...)
	}
	name := ""
	switch verb {
	case "create", "show", "delete", "clip":
		if len(rest) != 1 {
			return fmt.Errorf("channel %s: give one channel NAME", verb)
		}
		name = rest[0]
	case "list":
		if len(rest) != 0 {
			return errors.New("channel list takes no NAME")
		}
	default:
		fs.Usage()
		return fmt.Errorf("channel: unknown action %q: say create, list, show, delete or clip", verb)
	}
	tok, err := adminToken(*token, *dataDir)
	if err != nil {
		return err
	}
	c := &apiClient{base: strings.TrimRight(*srv, "/"), token: tok, dataDir: *dataDir}

	switch verb {
	case "list":
		var out struct {
			Channels []publish.ChannelJSON `json:"channels"`
		}
		raw, err := c.do(ctx, http.MethodGet, "/api/channels", nil, &out)
		if err != nil {
			return err
		}
		if *asJSON {
			_, err = stdout.Write(raw)
			return err
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTATE\tSOURCE\tDVR\tARCHIVE\tDASH")
		for _, ch := range out.Channels {
			arch := "off"
			if ch.Options.Archiving {
				arch = ch.Options.ArchiveLength.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ch.Name, ch.State, ch.Source, ch.Options.DVRWindowLength, arch, ch.DASH)
		}
		return tw.Flush()
	case "delete":
		if _, err := c.do(ctx, http.MethodDelete, "/api/channels/"+name, nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted channel %s\n", name)
		return nil
	case "clip":
		if *clipAs == "" || *clipFrom == "" || *clipTo == "" {
			return errors.New("channel clip: give --as ASSET, --from TIME and --to TIME")
		}
		var cj publish.ClipJSON
		raw, err := c.do(ctx, http.MethodPost, "/api/channels/"+name+"/clips", publish.ClipRequest{Name: *clipAs, Start: *clipFrom, End: *clipTo}, &cj)
		if err != nil {
			return err
		}
		if *asJSON {
			_, err = stdout.Write(raw)
			return err
		}
		fmt.Fprintf(stdout, "made asset %s (%.1f s, %d tracks) from channel %s\n  DASH  %s\n  HLS   %s\n", cj.Name, cj.DurationS, cj.Tracks, name, cj.DASH, cj.HLS)
		return nil
	case "show":
		var ch publish.ChannelJSON
		raw, err := c.do(ctx, http.MethodGet, "/api/channels/"+name, nil, &ch)
		if err != nil {
			return err
		}
		if *asJSON {
			_, err = stdout.Write(raw)
			return err
		}
		printChannel(stdout, ch, false)
		return nil
	}

	// create
	req := publish.CreateRequest{Name: name, Preset: *preset, IngestToken: *ingestTk}
	req.Archiving = *archive
	req.RestartOnEncoderReconnect = *restart
	req.SegmentAddressing = *address
	for _, d := range []struct {
		flag, val string
		to        *publish.Duration
	}{
		{"archive-length", *archLen, &req.ArchiveLength}, {"archive-segment-length", *archSeg, &req.ArchiveSegmentLength},
		{"dvr", *dvr, &req.DVRWindowLength}, {"segment", *segment, &req.SegmentDuration},
		{"delay", *delay, &req.SuggestedPresentationDelay}, {"min-buffer", *minBuf, &req.MinBufferTime},
	} {
		if d.val == "" {
			continue
		}
		v, err := publish.ParseDuration(d.val)
		if err != nil {
			return fmt.Errorf("--%s: %w", d.flag, err)
		}
		*d.to = v
	}
	var ch publish.ChannelJSON
	if _, err := c.do(ctx, http.MethodPost, "/api/channels", req, &ch); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{
			"name": ch.Name, "ingest_url": ch.IngestURL, "ingest_token": ch.IngestToken, "dash": ch.DASH, "hls": ch.HLS,
		})
	}
	printChannel(stdout, ch, true)
	return nil
}

// printChannel writes a channel for a person; after create, how to feed it.
func printChannel(w io.Writer, ch publish.ChannelJSON, created bool) {
	if created {
		fmt.Fprintf(w, "created channel %s", ch.Name)
		if ch.Preset != "" {
			fmt.Fprintf(w, " (preset %s)", ch.Preset)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "channel %s (%s, %s)\n", ch.Name, ch.State, ch.Source)
	}
	o := ch.Options
	fmt.Fprintf(w, "  ingest URL    %s/Streams({track}.cmfv|.cmfa)\n", ch.IngestURL)
	fmt.Fprintf(w, "  ingest token  %s\n", ch.IngestToken)
	fmt.Fprintf(w, "  DASH          %s\n  HLS           %s\n", ch.DASH, ch.HLS)
	fmt.Fprintf(w, "  DVR window %s, segments %s, archive ", o.DVRWindowLength, o.SegmentDuration)
	if o.Archiving {
		fmt.Fprintf(w, "%s in %s groups\n", o.ArchiveLength, o.ArchiveSegmentLength)
	} else {
		fmt.Fprintln(w, "off")
	}
	for _, t := range ch.Tracks {
		fmt.Fprintf(w, "  track %-8s connected=%t chunks=%d bytes=%d dropped=%d\n", t.ID, t.Connected, t.Chunks, t.Bytes, t.Dropped)
	}
	if created {
		fmt.Fprintf(w, "\nFeed it:\n  streambed encode live --to %s --token %s\n", ch.IngestURL, ch.IngestToken)
		fmt.Fprintf(w, "or with FFmpeg, one output per track:\n  ffmpeg -re -i IN -map 0:v -c:v libx264 -g 48 -f mp4 -movflags cmaf+frag_keyframe+empty_moov+default_base_moof \\\n"+
			"    -method POST -headers 'Authorization: Bearer %s' '%s/Streams(video.cmfv)'\n", ch.IngestToken, ch.IngestURL)
	}
}

// adminToken finds the admin token: flag, environment, then the data folder.
func adminToken(flagValue, dataDir string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if t := os.Getenv("STREAMBED_ADMIN_TOKEN"); t != "" {
		return t, nil
	}
	t, err := fsutil.ReadToken(publish.AdminTokenFile(dataDir))
	if err != nil {
		return "", fmt.Errorf("reading the admin token: %w (run as the user that runs serve, or pass --token)", err)
	}
	return t, nil // "" lets the origin answer 401 with where the token lives
}

// apiClient calls /api/channels.
type apiClient struct {
	base, token, dataDir string
}

// do sends body as JSON and decodes the answer into out; it returns the raw answer.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", c.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no origin answers at %s (%v): start it with `streambed serve`, or point --server at it", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, fmt.Errorf("the origin refused the admin token (401): pass --token or $STREAMBED_ADMIN_TOKEN, or run where %s is readable (--data-dir)",
			publish.AdminTokenFile(c.dataDir))
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(raw)))
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s %s: the answer is not channel JSON: %w", method, path, err)
		}
	}
	return raw, nil
}
