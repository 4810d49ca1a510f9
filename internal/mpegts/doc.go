// Package mpegts writes an MPEG transport stream (ISO/IEC 13818-1) of one H.264
// video stream and, optionally, one AAC audio stream (as ADTS): what a player
// reading a pipe (ffplay -, VLC, mpv) or srt-live-transmit expects.
//
// It is a writer only; it exists because bluenviron/mediacommon, the library
// FIELD.md names for this, is not in this project's module proxy. It writes a
// PAT and PMT before every video keyframe, PCR on the video PID, and sets the
// random access indicator on keyframes.
package mpegts
