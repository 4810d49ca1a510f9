// Package integration holds end-to-end tests that run real outside clients (ffprobe,
// ffmpeg) against a real origin on loopback, over content FFmpeg made for the test.
package integration
