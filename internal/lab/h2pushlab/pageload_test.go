package main

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestPageLoadCounts loads the standard page on loopback over each protocol and
// checks what the loader counts: requests on the wire, pushes, connections, bytes,
// and that the DOM is loaded before the page.
func TestPageLoadCounts(t *testing.T) {
	dir := t.TempDir()
	sizes, err := genPage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 22 {
		t.Fatalf("page has %d files, want 22 (HTML, CSS, 20 PNG)", len(sizes))
	}
	var total int64
	for _, n := range sizes {
		total += int64(n)
	}
	srv, p, err := newPageServer(dir, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ls) }()
	t.Cleanup(func() { cancel(); <-done })
	pageURL := "http://" + ls.HTTP.Addr().String() + "/"

	for _, tc := range []struct {
		proto              string
		requests, pushed   int64
		minConns, maxConns int64
	}{
		{protoHTTP1, 22, 0, 2, 6}, // the HTML's connection, then up to six at once
		{protoH2, 22, 0, 1, 1},
		{protoH2Push, 1, 21, 1, 1}, // the HTML request pushes the CSS and the 20 images
	} {
		t.Run(tc.proto, func(t *testing.T) {
			lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
			defer lcancel()
			promisedBefore := p.Stats().Promised
			r, err := fetchPage(lctx, tc.proto, pageURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", r)
			if r.Resources != 21 {
				t.Errorf("resources = %d, want 21", r.Resources)
			}
			if r.Requests != tc.requests || r.Pushed != tc.pushed {
				t.Errorf("requests %d, pushed %d; want %d, %d", r.Requests, r.Pushed, tc.requests, tc.pushed)
			}
			if r.Connections < tc.minConns || r.Connections > tc.maxConns {
				t.Errorf("connections = %d, want %d–%d", r.Connections, tc.minConns, tc.maxConns)
			}
			if r.Bytes != total {
				t.Errorf("bytes = %d, want the page's %d", r.Bytes, total)
			}
			if r.WireRead < total {
				t.Errorf("wire bytes %d < body bytes %d", r.WireRead, total)
			}
			if r.Unclaimed != 0 {
				t.Errorf("unclaimed pushed bytes = %d, want 0", r.Unclaimed)
			}
			if promised := p.Stats().Promised - promisedBefore; promised != tc.pushed || r.Promised != tc.pushed {
				t.Errorf("server promised %d, client saw %d, want %d", promised, r.Promised, tc.pushed)
			}
			if !(r.DOMLoadMS > 0 && r.DOMLoadMS <= r.PageLoadMS) {
				t.Errorf("dom %.2f ms, page %.2f ms: want 0 < dom ≤ page", r.DOMLoadMS, r.PageLoadMS)
			}
		})
	}
}

// TestPageIsStable checks that the generator writes the same page every time, so
// results of different runs and machines are about the same bytes.
func TestPageIsStable(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if _, err := genPage(d); err != nil {
			t.Fatal(err)
		}
	}
	da, err := pageDigest(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := pageDigest(b)
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Fatalf("two generations differ: %s vs %s", da, db)
	}
}
