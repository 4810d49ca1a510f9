# ab-lib.sh — what bench/h1-ab.sh and bench/h2-ab.sh share: the checks, the packaged
# asset, a work folder, nginx's config beside our origin on the same files, and starting
# and stopping one server at a time. Sourced, not run. Expects NAME_OF_BENCH, A, B,
# ASSET, PORT, SERVER_CPU; sets ASSET (absolute), NAME, work, PID and SPID.

# ab_setup TOOL... — the port free, the tools there, the asset packaged, the work folder.
ab_setup() {
  ss -Htln "sport = :$PORT" | grep -q . && { echo "$NAME_OF_BENCH: port $PORT is already in use (another bench or server?): set PORT=... to a free port" >&2; exit 1; }
  local tool
  for tool in "$@"; do command -v "$tool" >/dev/null || { echo "$NAME_OF_BENCH: $tool is missing (make bench-origin installs it)" >&2; exit 1; }; done
  [ -f "$ASSET/stream.json" ] || "$B" package --synthetic 40s --segment-duration 2s --name bench -o "$ASSET"
  ASSET=$(cd "$ASSET" && pwd)
  NAME=$(basename "$ASSET")
  work=$(mktemp -d)
  PID=""
  trap 'stop; rm -rf "$work"' EXIT
  mkdir -p "$work/assets" && ln -s "$ASSET" "$work/assets/$NAME"
}

# ab_nginx_conf [LISTEN_FLAGS] — nginx serving the asset on $PORT (e.g. "http2").
ab_nginx_conf() {
  cat > "$work/nginx.conf" <<NGX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 120s;
  open_file_cache max=10000 inactive=60s;
  types { video/mp4 m4s mp4; }
  server { listen 127.0.0.1:$PORT${1:+ $1}; location /vod/$NAME/ { alias $ASSET/; add_header Cache-Control "public, max-age=31536000, immutable"; } }
}
NGX
}

# stop waits for nginx's master to exit too: it holds the port until then, and the next
# server to start on it would fail to bind (seen on a loaded machine).
stop() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; PID=""; fi
  if [ -f "$work/nginx.pid" ]; then
    local np; np=$(cat "$work/nginx.pid"); kill "$np" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$np" 2>/dev/null || break; sleep 0.1; done
    rm -f "$work/nginx.pid"
  fi
  true
}

# ab_start WHO — nginx, or streambed A or B; the server's PID (nginx's worker) in
# $SPID. The caller then waits for it to answer.
ab_start() {
  case $1 in
    nginx) taskset -c "$SERVER_CPU" nginx -c "$work/nginx.conf" -e "$work/nginx-error.log"
      for _ in $(seq 50); do [ -f "$work/nginx.pid" ] && pgrep -P "$(cat "$work/nginx.pid")" >/dev/null && break; sleep 0.1; done
      SPID=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1) ;;
    *) local bin=$A; [ "$1" = B ] && bin=$B
      rm -rf "$work/data"
      taskset -c "$SERVER_CPU" "$bin" serve --http "127.0.0.1:$PORT" --https "" --data-dir "$work/data" --assets "$work/assets" \
        --no-demo --channel "x=$NAME" --log-level warn > "$work/sb.log" 2>&1 &
      PID=$!; SPID=$PID ;;
  esac
}
