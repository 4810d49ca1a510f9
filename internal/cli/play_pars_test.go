package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/pars"
)

// TestPlayParSPipeline plays the test asset with `play --transport pars
// --connections 2` (pipelined HTTP/1.1 by default) and with `--pars-pipeline=false`
// from the real origin with its segment index: to the end, without stalls, over two
// connections.
func TestPlayParSPipeline(t *testing.T) {
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New()
	h.AddAsset(a)
	srv := server.New(server.DefaultConfig(), h, slog.New(slog.DiscardHandler), nil)
	srv.Handle(pars.IndexPattern, pars.IndexHandler(h))
	s := httptest.NewServer(srv.Handler())
	defer s.Close()
	for _, flags := range [][]string{nil, {"--pars-pipeline=false"}} {
		var out, errOut bytes.Buffer
		args := append([]string{s.URL + "/vod/" + a.Info().Name + "/manifest.mpd", "--transport", "pars", "--connections", "2", "--json", "--no-samples"}, flags...)
		if err := Play(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("%v: %v\n%s", flags, err, errOut.String())
		}
		var rep map[string]any
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v: not one JSON object: %v\n%s", flags, err, out.String())
		}
		if rep["end_reason"] != "ended" || rep["stall_count"].(float64) != 0 || rep["connections"].(float64) != 2 || rep["protocol"] != "HTTP/1.1" {
			t.Errorf("%v: report %s", flags, out.String())
		}
	}
}
