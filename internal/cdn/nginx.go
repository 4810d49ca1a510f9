package cdn

import (
	"bytes"
	"os"
	"path/filepath"
	"text/template"
)

// NginxConfig is nginx.conf for o. Paths inside it are absolute (under o.Dir), so
// nginx runs with `-p DIR -c DIR/nginx.conf` from anywhere.
func NginxConfig(o Options) ([]byte, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	user := o.User
	if user == "" && os.Geteuid() == 0 {
		user = "root" // workers must write the cache under Dir, which only root may enter
	}
	var b bytes.Buffer
	err = nginxTemplate.Execute(&b, map[string]any{
		"O": o, "Dir": dir, "User": user,
		"CacheMB":     o.CacheSize >> 20,
		"LockTimeout": int(o.LockTimeout.Seconds()),
		"Tries":       len(o.Upstreams) + 1,
	})
	return b.Bytes(), err
}

var nginxTemplate = template.Must(template.New("nginx.conf").Parse(`# Streambed {{.O.Role}} cache — written by ` + "`streambed cdn nginx`" + `; docs/cdn.md explains it.
# nginx -p {{.Dir}} -c {{.Dir}}/nginx.conf -e {{.Dir}}/error.log
daemon off;
{{if .User}}user {{.User}};
{{end}}worker_processes auto;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log warn;

events {
    worker_connections 8192;
}

http {
    client_body_temp_path {{.Dir}}/tmp/body;
    proxy_temp_path       {{.Dir}}/tmp/proxy;
    fastcgi_temp_path     {{.Dir}}/tmp/fastcgi;
    uwsgi_temp_path       {{.Dir}}/tmp/uwsgi;
    scgi_temp_path        {{.Dir}}/tmp/scgi;
    types {}
    default_type application/octet-stream;
    server_tokens off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;

    log_format cdn '$time_iso8601 $remote_addr "$request" $status $body_bytes_sent '
                   '$request_time cache=$upstream_cache_status upstream=$upstream_addr '
                   'upstream_status=$upstream_status upstream_time=$upstream_response_time';
    access_log {{.Dir}}/access.log cdn buffer=64k flush=1s;

    # One cache. The origin's Cache-Control decides what goes in and for how long
    # (no proxy_cache_valid: a response without caching headers is not kept).
    proxy_cache_path {{.Dir}}/cache levels=1:2 keys_zone=streambed:64m
                     max_size={{.CacheMB}}m inactive=10m use_temp_path=off;

    upstream streambed_upstream {
{{- if eq .O.Role "edge"}}
        # An edge spreads objects over its shields by URL, so each object is fetched
        # through one shield (one origin request per object per shield).
        hash $request_uri consistent;
{{- end}}
{{- range .O.Upstreams}}
        server {{.}} max_fails=1 fail_timeout=3s;
{{- end}}
        keepalive 64;
    }

    # The host and scheme the viewer used travel to the origin, which writes absolute
    # URLs (UTCTiming) with them: players come back through this cache.
    map $http_host $cdn_host {
        ""      $host;
        default $http_host;
    }
    map $http_x_forwarded_proto $cdn_proto {
        ""      $scheme;
        default $http_x_forwarded_proto;
    }
    # At most two variants per object (Vary: Accept-Encoding): gzip or identity.
    map $http_accept_encoding $cdn_accept_encoding {
        "~*gzip" gzip;
        default  "";
    }
    # A stale copy (served while one request refreshes it, or because every upstream
    # failed) goes on as not cacheable: a tier below would otherwise keep it for a
    # whole max-age more, beyond the object's life (nginx sends no Age header).
    map $upstream_cache_status $cdn_cache_control {
        STALE    "no-cache";
        UPDATING "no-cache";
        default  $upstream_http_cache_control;
    }
    map $http_upgrade $cdn_connection {
        default upgrade;
        ""      "";
    }

    server {
        listen {{.O.Listen}} reuseport;
        proxy_http_version 1.1;
        proxy_connect_timeout 2s;
        proxy_read_timeout 60s;

        # Failover: a request that finds an upstream down or failing is sent to the
        # next one; byte-identical segments make any origin's answer the same answer.
        proxy_next_upstream error timeout http_502 http_503 http_504;
        proxy_next_upstream_tries {{.Tries}};
        proxy_next_upstream_timeout 10s;

        location / {
            proxy_pass http://streambed_upstream;
            proxy_set_header Host $cdn_host;
            proxy_set_header X-Forwarded-Proto $cdn_proto;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header Accept-Encoding $cdn_accept_encoding;
            proxy_set_header Connection "";

            proxy_cache streambed;
            # The query string is part of the key: HLS blocking reloads (_HLS_msn,
            # _HLS_part, _HLS_skip) and ?nowMS= are different objects.
            proxy_cache_key "$cdn_proto://$cdn_host$request_uri";
            # Request collapsing: one request per object goes upstream; the others wait
            # for it (a live segment in progress: until it is complete).
            proxy_cache_lock on;
            proxy_cache_lock_timeout {{.LockTimeout}}s;
            proxy_cache_lock_age {{.LockTimeout}}s;
            # Stale-while-revalidate: an expired manifest is answered from the cache
            # while one background request refreshes it.
            proxy_cache_use_stale updating error timeout http_500 http_502 http_503 http_504;
            proxy_cache_background_update on;
            proxy_cache_revalidate on;
            # Buffering stays on (a cache needs it); nginx still passes each chunk of a
            # streamed segment on to the request that fetches it as it arrives. An
            # upstream response that ends early is not cached.
            proxy_buffering on;
            proxy_buffers 64 16k;

            proxy_hide_header Cache-Control;
            add_header Cache-Control $cdn_cache_control always;
            add_header X-Cache-{{.O.Role}} $upstream_cache_status always;
        }

        # WebSocket push: upgraded and passed through, never cached.
        location /ws/ {
            proxy_pass http://streambed_upstream;
            proxy_set_header Host $cdn_host;
            proxy_set_header X-Forwarded-Proto $cdn_proto;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $cdn_connection;
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
        }

        # Live ingest: encoders' long chunked uploads, streamed on, never cached.
        location /ingest/ {
            proxy_pass http://streambed_upstream;
            proxy_set_header Host $cdn_host;
            proxy_set_header X-Forwarded-Proto $cdn_proto;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header Connection "";
            proxy_request_buffering off;
            proxy_buffering off;
            client_max_body_size 0;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            proxy_next_upstream off;
        }
    }
}
`))
