# Streambed — two commands: `make run` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
GO ?= go
BIN := bin/streambed
ASSETS ?= $(HOME)/.cache/streambed/assets
STATICCHECK_VERSION := v0.6.1
GOBIN := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

# Commands a user needs to run the demo, and what the tests use besides.
RUN_DEPS  := ffmpeg:ffmpeg ffprobe:ffmpeg node:nodejs npm:npm
TEST_DEPS := chromium:chromium chromedriver:chromium-driver xmllint:libxml2-utils nginx:nginx \
             wrk:wrk nghttp:nghttp2-client h2o:h2o aria2c:aria2 iperf3:iperf3 ip:iproute2 \
             iptables:iptables ping:iputils-ping

.PHONY: run test build deps test-deps demo test-assets go-test lint bench bench-origin lab-smoke clean help
.DEFAULT_GOAL := help

help:
	@echo "make run     install what is missing, build, prepare the demo, serve it on :8080/:8443"
	@echo "make test    install test dependencies and run every test (Go, fuzz seeds, browser)"
	@echo "make build   build web app and bin/streambed"
	@echo "make bench-origin   wrk against streambed and nginx serving the same files"

# The browser tests serve a short demo (live channel and asset "demo") from here.
STREAMBED_TEST_ASSETS := $(CURDIR)/.cache/test-assets
WEB_TEST_DEPS := build test-assets

include web/web.mk

deps:
	@scripts/ensure-deb.sh $(RUN_DEPS)
	@command -v $(GO) >/dev/null || { echo "Go is missing: install Go 1.24+ (https://go.dev/dl)"; exit 1; }

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

go-test:
	$(GO) test -race -count=1 ./...

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

# wrk against Streambed and nginx serving the same files; appends to docs/results/origin.md.
bench-origin: build test-deps
	bench/bench-origin.sh
