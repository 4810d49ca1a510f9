# Streambed — two commands: `make run` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
GO ?= go
BIN := bin/streambed
ASSETS ?= $(HOME)/.cache/streambed/assets
STATICCHECK_VERSION := v0.6.1
GOBIN := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
# go.mod names the Go it needs (1.26.8); a Go of 1.21 or later fetches that one through
# the module proxy when it is older (scripts/ensure-go.sh), even where a distribution
# set GOTOOLCHAIN=local in its go.env. Set GOTOOLCHAIN yourself to override.
export GOTOOLCHAIN ?= auto

# Commands a user needs to run the demo, and what the tests use besides: Chromium for
# the browser tests, xmllint for MPD schema validation, nghttp as the outside HTTP/2
# push client, ip/tc/iptables for the network emulator's tests and the lab smoke run.
# Benchmarks and lab studies install their own peers (bench-*, lab-peers).
RUN_DEPS  := ffmpeg:ffmpeg ffprobe:ffmpeg node:nodejs npm:npm
TEST_DEPS := chromium:chromium xmllint:libxml2-utils nghttp:nghttp2-client ip:iproute2 tc:iproute2 \
             iptables:iptables nginx:nginx varnishd:varnish \
             srt-live-transmit:srt-tools
# What each benchmark compares with or drives.
BENCH_ORIGIN_DEPS   := nginx:nginx wrk:wrk curl:curl h2load:nghttp2-client openssl:openssl
BENCH_CAPACITY_DEPS := nginx:nginx taskset:util-linux curl:curl python3:python3
# Outside programs the lab studies put beside ours: aria2c (ParS study), h2o (push from
# h2o), iperf3 (the emulator's calibration against a second tool).
LAB_PEER_DEPS := aria2c:aria2 h2o:h2o iperf3:iperf3 nghttp:nghttp2-client
# The A/B of two binaries (bench/ab-origin.sh) and the suite under a busy core.
BENCH_AB_DEPS := wrk:wrk curl:curl jq:jq taskset:util-linux python3:python3
BENCH_INGEST_DEPS := curl:curl jq:jq taskset:util-linux bc:bc ffmpeg:ffmpeg
STRESS_DEPS   := stress-ng:stress-ng

.PHONY: run test build deps test-deps demo test-assets go-test lint bench bench-origin bench-ws-capacity \
        bench-ws-capacity-nginx bench-ws-relay bench-ab bench-h1-ab bench-h2-ab bench-ingest stress-suite lab-peers lab-smoke clean help
.DEFAULT_GOAL := help

help:
	@echo "make run     install what is missing, build, prepare the demo, serve it on :8080/:8443"
	@echo "make test    install test dependencies and run every test (Go, fuzz seeds, browser)"
	@echo "make build   build web app and bin/streambed"
	@echo "make bench-origin   wrk against streambed and nginx serving the same files"
	@echo "SERVER_QUOTA=0.3 make bench-origin   the same plus a server-bound table: each server in 0.3 of a core (root, cgroup v1)"
	@echo "make bench-ws-capacity[-nginx]   WebSocket push capacity (root; JSON into docs/results)"
	@echo "make bench-ws-steady A=OLD_BIN [B=NEW_BIN]   push vs nginx vs the loopback floor: CPU per message with every viewer connected (root)"
	@echo "make bench-ws-relay   the same push viewers on one origin and behind two relay edges (origin CPU)"
	@echo "make bench-ab A=OLD_BIN B=NEW_BIN   the same origin workloads against two binaries (before/after)"
	@echo "make bench-h1-ab A=OLD_BIN [B=NEW_BIN]   lean HTTP/1.1 segment serving: two binaries and nginx, CPU and system calls per request"
	@echo "make bench-h2-ab A=OLD_BIN [B=NEW_BIN]   h2c segment serving (h2load): two binaries and nginx's http2, CPU per request"
	@echo "make bench-ingest   ingest latency (p50/p99) and channels per machine (INGEST_CHANNELS=\"1 5 10 20\")"
	@echo "make stress-suite   make test 5 times in a fresh clone with one core kept busy"
	@echo "make lab-peers   install the outside programs the lab studies compare with"

# The browser tests serve a short demo (live channel and asset "demo") from here.
STREAMBED_TEST_ASSETS := $(CURDIR)/.cache/test-assets
WEB_TEST_DEPS := build test-assets

include web/web.mk

deps:
	@scripts/ensure-deb.sh $(RUN_DEPS)
	@GO=$(GO) scripts/ensure-go.sh

test-deps: deps
	@scripts/ensure-deb.sh $(TEST_DEPS)
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# go build is incremental by itself; the web app is embedded, so build it first.
build: deps web
	$(GO) build -o $(BIN) ./cmd/streambed

test-assets: build
	$(BIN) package --synthetic 16s --ladder 180p:100k,360p:400k,540p:800k --audio-bitrate 64k --preset ultrafast --name demo -o $(STREAMBED_TEST_ASSETS)/demo

demo: build
	$(BIN) package --synthetic 40s --name demo -o $(ASSETS)/demo

run: demo
	$(BIN) serve --assets $(ASSETS)

lint:
	@out=$$(gofmt -l cmd internal web/*.go); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

# The DASH schema lives beside the repository (../shared); without it the MPD schema
# tests skip, and this says so before and after the run (under CI=true they fail).
go-test:
	@scripts/dash-schema.sh >/dev/null
	$(GO) test -race -count=1 ./...
	@scripts/dash-schema.sh >/dev/null

# The lab end to end: packages a small clip, builds an emulated network (needs root),
# plays it over HTTP/1.1 and h2c at two RTTs; fails if any run fails.
lab-smoke: build
	$(BIN) lab run experiments/smoke.yaml --out .cache/lab-smoke
	@test -s .cache/lab-smoke/report.html

test: test-deps build lint go-test web-test lab-smoke

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/server/ ./internal/manifest/...

clean:
	rm -rf bin web/dist/*.js web/dist/*.css web/dist/*.html .cache

# wrk against Streambed and nginx serving the same files; appends the table to
# docs/results/origin.md and writes every wrk run to docs/results/origin/RUN.json.
bench-origin: build
	@scripts/ensure-deb.sh $(BENCH_ORIGIN_DEPS)
	bench/bench-origin.sh

# WebSocket push capacity (root: cgroups): the equal-CPU, unconstrained and memory
# steps of docs/results/wspush-capacity.md, each step's JSON into
# docs/results/wspush-capacity/; and the run with nginx as the pull peer.
bench-ws-capacity: build
	@scripts/ensure-deb.sh $(BENCH_CAPACITY_DEPS)
	bench/ws-capacity.sh

# WebSocket relay edges: the same viewers on one origin and behind two relay edges.
bench-ws-relay: build
	@scripts/ensure-deb.sh $(BENCH_CAPACITY_DEPS)
	bench/ws-relay-tree.sh

.PHONY: bench-soak
bench-soak: build
	@scripts/ensure-deb.sh $(BENCH_CAPACITY_DEPS)
	bench/soak.sh

# The soak mix's capacity at the soak's CPU budget, in steps (docs/results/soak.md).
.PHONY: bench-soak-steps
bench-soak-steps: build
	@scripts/ensure-deb.sh $(BENCH_CAPACITY_DEPS)
	bench/soak-steps.sh

bench-ws-capacity-nginx: build
	@scripts/ensure-deb.sh $(BENCH_CAPACITY_DEPS)
	bench/ws-capacity-nginx.sh

.PHONY: bench-ws-steady
bench-ws-steady: build
	@scripts/ensure-deb.sh $(BENCH_CAPACITY_DEPS) perf:linux-perf
	A=$(or $(A),bin/streambed) B=$(or $(B),$(or $(A),bin/streambed)) bench/ws-steady.sh

# A before/after pair: the same workloads against binaries A and B, alternated.
bench-ab: build
	@scripts/ensure-deb.sh $(BENCH_AB_DEPS)
	bench/ab-origin.sh $(A) $(or $(B),$(BIN))

# The lean HTTP/1.1 path, two binaries and nginx alternating (CPU per request, system calls)
bench-h1-ab: build
	@scripts/ensure-deb.sh $(BENCH_ORIGIN_DEPS) perf:linux-perf
	bench/h1-ab.sh $(A) $(or $(B),$(BIN))

# Per-request counters, samples and a Go profile at few and many connections (bench/h1-footprint.sh)
.PHONY: bench-h1-footprint
bench-h1-footprint: build
	@scripts/ensure-deb.sh $(BENCH_ORIGIN_DEPS) perf:linux-perf
	bench/h1-footprint.sh $(BIN)

bench-h2-ab: build
	@scripts/ensure-deb.sh $(BENCH_ORIGIN_DEPS)
	bench/h2-ab.sh $(A) $(or $(B),$(BIN))

# Live ingest: chunk-to-servable latency (Go benchmark) and channels per machine
# (replay encoders with the published ladder into pure-live publishing points).
bench-ingest: build
	@scripts/ensure-deb.sh $(BENCH_INGEST_DEPS)
	go test ./internal/source/ingest -run '^$$' -bench IngestToServable -benchtime 500x
	bench/ingest-channels.sh $(INGEST_CHANNELS)

# The suite must not flake on a busy machine: 5 runs of `make test` beside stress-ng.
stress-suite:
	@scripts/ensure-deb.sh $(STRESS_DEPS)
	scripts/stress-suite.sh 5

lab-peers:
	@scripts/ensure-deb.sh $(LAB_PEER_DEPS)
