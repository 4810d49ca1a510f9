// Package cmaf reads and writes CMAF (fragmented MP4) over mp4ff: it segments a
// one-track MP4 file into an init segment and media segments, and rewrites media
// segments for live delivery.
//
// Status (for the other rooms):
//
//   - Retime(seg, baseMediaDecodeTime, sequenceNumber) is done and tested: it copies a
//     media segment (styp? + moof+mdat…) with the first tfdt moved to
//     baseMediaDecodeTime (later fragments keep their offsets), mfhd sequence numbers
//     sequenceNumber, +1, …, every tfdt written as version 1, moof/traf sizes and trun
//     data offsets fixed. It drops sidx and prft. It never modifies its input.
//   - Rechunk(seg, samplesPerChunk) splits a segment into moof+mdat chunks (done,
//     tested; chunk k of a fragment gets its sequence number + k, renumber with Retime).
//   - ParseSegment / ParseFragments validate outside bytes (errors wrap
//     media.ErrInvalidMedia, never panic; fuzzed: FuzzParseSegment, FuzzRetime,
//     FuzzRechunk, FuzzParseInit). ParseInit reads an init segment (codec, size, trex).
//   - AppendFragment writes one moof+mdat; StypBox is the styp of our segments.
//   - Open(path) + Input.Init / Input.Segment cut a one-track MP4 file (progressive or
//     fragmented) at keyframes on segment-duration boundaries; the edit list is applied
//     (AAC priming dropped, so an 8 s encode gives exactly 8 s of audio).
//
// Only single-track fragments (one traf per moof) are handled, as CMAF requires, and
// only default-base-is-moof addressing (no explicit base_data_offset).
package cmaf
