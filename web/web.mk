# web/web.mk — the browser app; included from the top-level Makefile, run from the
# repository root.
#
#   make web             npm ci (npm install if there is no lock) in web/, type-check,
#                        and bundle web/src into web/dist (index.html, app.js, app.css)
#                        with esbuild. Incremental: nothing runs when web/src, the build
#                        script and the lock are unchanged.
#   make web-test        browser tests: the page on a real `streambed serve` in headless
#                        Chromium, live and VOD "demo" with dash.js, hls.js and WebSocket
#                        push, and low-latency live over WebSocket push. Every playback
#                        is recorded in $(WEB_TEST_RECORD) and tallied at the end (bars
#                        missed under load are recorded, not failed: testkit/checks.mjs).
#   make web-screenshot  docs/screenshots/player.png from a running server (WEB_URL).
#   make web-latency     WebSocket push latency in the browser on loopback, as JSON in
#                        docs/results/wspush-latency/ (scripts/wspush-latency.mjs).
#   make web-latency-all the latency of WebSocket push, LL-DASH (dash.js) and LL-HLS
#                        (hls.js) in the browser on loopback, 60 s each, as JSON in
#                        docs/results/latency/ (scripts/latency.mjs).
#   make web-headless-latency  the headless player (streambed play --json) and the
#                        browser at once on WebSocket push, LL-DASH and LL-HLS, 30 s × 3, as
#                        JSON in docs/results/latency/ (scripts/headless-latency.mjs).
#   make web-deps        apt-get install what is missing: nodejs, npm, chromium, ffmpeg.
#   make web-clean       remove the build output (web/dist except README.txt).
#
# Needs node >= 20 (checked) and npm for `web`; chromium (/usr/bin/chromium, or
# CHROMIUM_PATH) for the tests.
#
# Set by the including Makefile (or the command line):
#   STREAMBED_BIN          binary web-test starts (default bin/streambed)
#   STREAMBED_TEST_ASSETS  packaged assets folder, passed as `serve --assets DIR`
#   WEB_TEST_DEPS          more prerequisites of web-test, e.g. the binary and the assets
# The Go binary embeds web/dist: make it depend on $(WEB_DIST).

STREAMBED_BIN ?= bin/streambed
STREAMBED_TEST_ASSETS ?=
WEB_TEST_DEPS ?=
WEB_URL ?= http://127.0.0.1:8080

WEB_DIST := web/dist/index.html web/dist/app.js web/dist/app.css
WEB_SRC := $(shell find web/src -type f 2>/dev/null)
WEB_LOCK := $(wildcard web/package-lock.json)
WEB_INSTALLED := web/node_modules/.installed
WEB_TEST_RECORD ?= .cache/web-test/playback.jsonl
WEB_NODE_MIN := 20
# Fails with the version found when node is missing or older than WEB_NODE_MIN.
WEB_NODE_CHECK = @node -e 'process.exit(+process.versions.node.split(".")[0] >= $(WEB_NODE_MIN) ? 0 : 1)' 2>/dev/null || \
	{ echo "web: Node.js $(WEB_NODE_MIN) or later needed, found $$(node --version 2>/dev/null || echo none) (Debian 13 has 20; or https://nodejs.org)" >&2; exit 1; }

.PHONY: web web-deps web-test web-typecheck web-screenshot web-latency web-latency-all web-clean
.PHONY: web-headless-latency

web: $(WEB_DIST)

$(WEB_INSTALLED): web/package.json $(WEB_LOCK)
	$(WEB_NODE_CHECK)
	@command -v npm >/dev/null || { echo "web: npm not found (make web-deps, or apt-get install nodejs npm)" >&2; exit 1; }
	cd web && if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
	@touch $@

$(WEB_DIST) &: $(WEB_INSTALLED) web/build.mjs web/tsconfig.json $(WEB_SRC)
	cd web && node_modules/.bin/tsc --noEmit -p . && node build.mjs

web-typecheck: $(WEB_INSTALLED)
	cd web && node_modules/.bin/tsc --noEmit -p .

web-test: web $(WEB_TEST_DEPS)
	$(WEB_NODE_CHECK)
	@rm -f '$(WEB_TEST_RECORD)'
	@STREAMBED_BIN='$(STREAMBED_BIN)' STREAMBED_TEST_ASSETS='$(STREAMBED_TEST_ASSETS)' STREAMBED_WEB_TEST_RECORD='$(WEB_TEST_RECORD)' \
	  node --test web/test/; status=$$?; node web/testkit/tally.mjs '$(WEB_TEST_RECORD)'; exit $$status

web-screenshot: web
	@mkdir -p docs/screenshots
	node web/scripts/screenshot.mjs '$(WEB_URL)' docs/screenshots/player.png 'stream=demo&live=1&player=dashjs' 20 1280x1040

web-latency: web $(WEB_TEST_DEPS)
	STREAMBED_BIN='$(STREAMBED_BIN)' STREAMBED_TEST_ASSETS='$(STREAMBED_TEST_ASSETS)' node web/scripts/wspush-latency.mjs

web-latency-all: web $(WEB_TEST_DEPS)
	STREAMBED_BIN='$(STREAMBED_BIN)' STREAMBED_TEST_ASSETS='$(STREAMBED_TEST_ASSETS)' node web/scripts/latency.mjs

web-headless-latency: web $(WEB_TEST_DEPS)
	STREAMBED_BIN='$(STREAMBED_BIN)' STREAMBED_TEST_ASSETS='$(STREAMBED_TEST_ASSETS)' node web/scripts/headless-latency.mjs

web-deps:
	@missing=""; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	[ -x "$${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing="$$missing chromium"; \
	command -v ffmpeg >/dev/null || missing="$$missing ffmpeg"; \
	if [ -n "$$missing" ]; then \
	  echo "web-deps: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

web-clean:
	find web/dist -mindepth 1 ! -name README.txt -exec rm -rf {} +
