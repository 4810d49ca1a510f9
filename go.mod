module github.com/streambed/streambed

go 1.26.8

require (
	github.com/Eyevinn/mp4ff v0.50.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/pion/randutil v0.1.0 // indirect
	github.com/pion/rtp v1.10.6 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
