// Package avc classifies the NAL units of H.264 samples and splits each one into the
// part a decoder cannot lose and the part it can: the split FDSP sends over TCP and
// RTP/UDP (internal/transport/fdsp).
//
// The rule, for one NAL unit and a bitstream-prioritisation share BP (0..100 %):
//
//   - parameter sets, SEI, access unit delimiters and every other non-slice NAL unit
//     go whole to the critical (TCP) part;
//   - a slice's header goes to the critical part: its first ParseSliceHeader.Size
//     bytes (mp4ff's count of escaped bytes read, NAL header included);
//   - of an intra slice's data (slice type I or SI, IDR or not), the first
//     ceil(BP% of the data bytes) go to the critical part too; the rest of an intra
//     slice, and all of any other slice's data, is the loss-tolerant (UDP) part.
//
// The split is at a byte boundary that keeps the header whole. The slice header
// ends inside a byte: under CABAC that byte is completed by cabac_alignment_one_bits,
// so the data starts exactly at Size; under CAVLC the byte is shared, its first bits
// the header's and its last the first macroblock's. The shared byte goes with the
// header (it is counted in Size), so the critical part alone always re-parses to the
// same header and the two parts concatenated are the NAL unit, byte for byte.
// Emulation-prevention bytes are counted as they stand in the NAL unit; the split
// never removes or adds one.
package avc
