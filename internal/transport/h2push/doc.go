// Package h2push is HTTP/2 server push for DASH, both ends: push strategies that
// wrap the origin's pull routes, a push-capable headless client for the player, the
// push rules store with its admin page and JSON API, and 103 Early Hints for the
// player page. docs/protocols/h2push.md describes the behaviour on the wire.
//
// Server. A Strategy turns one request (the player page, an MPD, an init or a media
// segment) into a push set: the resources the client will ask for next
// (PushSet). The middleware (Pusher.Wrap) promises them with http.Pusher before the
// response, over TLS h2 and h2c alike, and runs the promised responses one at a time
// per connection in media-time order, so the segment a player needs first is the one
// on the wire first. `?push=none|all|init|init-first|audio|k<K>` on the page, MPD or
// segment request that starts a session selects the strategy for the rest of that
// connection; otherwise the asset's rule, otherwise the configured default applies.
// A client that refuses push (SETTINGS_ENABLE_PUSH=0) gets plain responses; a push
// the client resets stops at once and frees its place in the queue.
//
// Client. The push-accepting HTTP/2 client is its own package, pushclient. Fetcher
// is the player's transport over it: a request for a URL that was promised claims the
// push instead of going on the wire, and pushes that the player will not use (other
// renditions after a switch, segments behind the playhead) are reset with
// RST_STREAM(CANCEL).
package h2push
