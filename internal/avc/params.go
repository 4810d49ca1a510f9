package avc

import (
	"bytes"
	"fmt"

	mp4avc "github.com/Eyevinn/mp4ff/avc"
	"github.com/Eyevinn/mp4ff/mp4"
)

// ParameterSets are the SPS and PPS a stream's slices refer to, parsed (to read
// slice headers) and as bytes (to send them ahead of the slices).
type ParameterSets struct {
	sps    map[uint32]*mp4avc.SPS
	pps    map[uint32]*mp4avc.PPS
	SPS    [][]byte // in the order added, latest per id
	PPS    [][]byte
	spsRaw map[uint32]int // id → index in SPS
	ppsRaw map[uint32]int
}

// NewParameterSets is an empty set.
func NewParameterSets() *ParameterSets {
	return &ParameterSets{
		sps: map[uint32]*mp4avc.SPS{}, pps: map[uint32]*mp4avc.PPS{},
		spsRaw: map[uint32]int{}, ppsRaw: map[uint32]int{},
	}
}

// Add parses an SPS or PPS NAL unit and keeps it; other NAL units are ignored. A PPS
// needs its SPS first.
func (p *ParameterSets) Add(nal []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: parameter set: %v", ErrBadNAL, r)
		}
	}()
	switch Type(nal) {
	case NALSPS:
		if err := checkSPS(nal); err != nil {
			return err
		}
		s, err := mp4avc.ParseSPSNALUnit(nal, false)
		if err != nil {
			return fmt.Errorf("%w: SPS: %v", ErrBadNAL, err)
		}
		p.sps[s.ParameterID] = s
		p.spsRaw[s.ParameterID] = keep(&p.SPS, p.spsRaw, s.ParameterID, nal)
	case NALPPS:
		if err := checkPPS(nal); err != nil {
			return err
		}
		s, err := mp4avc.ParsePPSNALUnit(nal, p.sps)
		if err != nil {
			return fmt.Errorf("%w: PPS: %v", ErrBadNAL, err)
		}
		p.pps[s.PicParameterSetID] = s
		p.ppsRaw[s.PicParameterSetID] = keep(&p.PPS, p.ppsRaw, s.PicParameterSetID, nal)
	}
	return nil
}

// keep stores a copy of nal under id in list, replacing the earlier one with that id.
func keep(list *[][]byte, idx map[uint32]int, id uint32, nal []byte) int {
	c := bytes.Clone(nal)
	if i, ok := idx[id]; ok {
		(*list)[i] = c
		return i
	}
	*list = append(*list, c)
	return len(*list) - 1
}

// CABAC reports whether every PPS selects CABAC (entropy_coding_mode_flag).
func (p *ParameterSets) CABAC() bool {
	for _, s := range p.pps {
		if !s.EntropyCodingModeFlag {
			return false
		}
	}
	return len(p.pps) > 0
}

// FromInit reads the parameter sets and the NAL length size (4) from a CMAF video init
// segment's avcC box.
func FromInit(init []byte) (ps *ParameterSets, lengthSize int, err error) {
	defer func() {
		if r := recover(); r != nil {
			ps, err = nil, fmt.Errorf("%w: init segment: %v", ErrBadNAL, r)
		}
	}()
	f, err := mp4.DecodeFile(bytes.NewReader(init))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: init segment: %v", ErrBadNAL, err)
	}
	if f.Moov == nil || len(f.Moov.Traks) != 1 {
		return nil, 0, fmt.Errorf("%w: init segment without exactly one track", ErrBadNAL)
	}
	t := f.Moov.Traks[0]
	if t.Mdia == nil || t.Mdia.Minf == nil || t.Mdia.Minf.Stbl == nil || t.Mdia.Minf.Stbl.Stsd == nil ||
		t.Mdia.Minf.Stbl.Stsd.AvcX == nil || t.Mdia.Minf.Stbl.Stsd.AvcX.AvcC == nil {
		return nil, 0, fmt.Errorf("%w: init segment has no avcC box", ErrBadNAL)
	}
	c := t.Mdia.Minf.Stbl.Stsd.AvcX.AvcC
	ps = NewParameterSets()
	for _, s := range c.SPSnalus {
		if err := ps.Add(s); err != nil {
			return nil, 0, err
		}
	}
	for _, s := range c.PPSnalus {
		if err := ps.Add(s); err != nil {
			return nil, 0, err
		}
	}
	// mp4ff reads avcC without its lengthSizeMinusOne; FFmpeg and mp4ff write 4-byte
	// lengths, as every CMAF encoder does in practice.
	return ps, 4, nil
}
