package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ariaResult is what one aria2c run did.
type ariaResult struct {
	Bytes   int64         // of completed files
	Files   int           // completed
	Elapsed time.Duration // start to the last completion
	Args    string
	// Delivered is what aria2c had written (completed files and the one in progress)
	// when budget had passed since its start.
	Delivered delivered
}

// ariaArgs is the command line the study compares with: N connections per server,
// N pieces, at least 1 MiB per piece (aria2c's smallest), one file at a time.
func ariaArgs(n int) []string {
	return []string{"aria2c", "-x", strconv.Itoa(n), "-s", strconv.Itoa(n), "-k", "1M", "-j", "1",
		"--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false",
		"--summary-interval=0", "--console-log-level=notice", "--enable-color=false",
		"--max-tries=5", "--retry-wait=1",
		// Write every piece as it arrives (not from a 16 MiB cache when it is done), so
		// the files' sizes are what aria2c received at any moment.
		"--disk-cache=0"}
}

// runAria downloads urls (sizes in bytes) with aria2c -x n -s n -k 1M in the client
// host, one after the other, and stops after budget (finishing nothing more). The
// time is taken from aria2c's start to its last "Download complete".
func (l *lab) runAria(ctx context.Context, urls []string, sizes []int64, n int, budget time.Duration) (ariaResult, error) {
	dir, err := os.MkdirTemp("", "pars-aria-")
	if err != nil {
		return ariaResult{}, err
	}
	defer os.RemoveAll(dir)
	var list strings.Builder
	byName := map[string]int64{}
	for i, u := range urls {
		name := fmt.Sprintf("f%04d.m4s", i)
		fmt.Fprintf(&list, "%s?copy=%d\n  out=%s\n", u, i, name)
		byName[name] = sizes[i]
	}
	listPath := filepath.Join(dir, "list")
	if err := os.WriteFile(listPath, []byte(list.String()), 0o644); err != nil {
		return ariaResult{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, budget+30*time.Second)
	defer cancel()
	args := append(ariaArgs(n), "-d", filepath.Join(dir, "out"), "-i", listPath)
	cmd := l.nw.CommandContext(rctx, "client", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return ariaResult{}, err
	}
	cmd.Stderr = cmd.Stdout
	res := ariaResult{Args: strings.Join(ariaArgs(n), " ")}
	start := time.Now()
	arrived := sampleAt(start, budget, func() int64 { return filesBytes(filepath.Join(dir, "out"), ".m4s") })
	if err := cmd.Start(); err != nil {
		return res, err
	}
	sc := bufio.NewScanner(out)
	var last time.Time
	stopped := false
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "Download complete: ")
		if i < 0 {
			continue
		}
		name := filepath.Base(strings.TrimSpace(line[i+len("Download complete: "):]))
		size, ok := byName[name]
		if !ok {
			continue
		}
		last = time.Now()
		res.Bytes += size
		res.Files++
		if !stopped && last.Sub(start) >= budget {
			stopped = true
			_ = cmd.Process.Signal(os.Interrupt)
		}
	}
	werr := cmd.Wait()
	if res.Files == 0 {
		return res, fmt.Errorf("aria2c completed no file: %v", werr)
	}
	res.Elapsed = last.Sub(start)
	if budget > 0 { // the last completion is at or after budget: the reading is there
		res.Delivered = arrived()
	}
	return res, nil
}
