package manifest

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

// FrameRate is a frame rate as an exact fraction, such as 30000/1001.
type FrameRate struct{ Num, Den uint64 }

// ParseFrameRate reads "25", "30000/1001" or a decimal such as "29.97". An empty
// string gives the zero FrameRate (unknown) and no error.
func ParseFrameRate(s string) (FrameRate, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return FrameRate{}, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() <= 0 || !r.Num().IsUint64() || !r.Denom().IsUint64() {
		return FrameRate{}, fmt.Errorf("frame rate %q: %w", s, media.ErrInvalidMedia)
	}
	if n, d, isFrac := strings.Cut(s, "/"); isFrac {
		// Keep the fraction as written (30000/1001 stays, 50/2 stays) when it is exact
		// integers: players and people recognise the usual forms.
		var fn, fd big.Int
		if _, ok1 := fn.SetString(n, 10); ok1 {
			if _, ok2 := fd.SetString(d, 10); ok2 && fn.IsUint64() && fd.IsUint64() && fd.Sign() > 0 {
				return FrameRate{fn.Uint64(), fd.Uint64()}, nil
			}
		}
	}
	return FrameRate{r.Num().Uint64(), r.Denom().Uint64()}, nil
}

// IsZero reports an unknown frame rate.
func (f FrameRate) IsZero() bool { return f.Num == 0 || f.Den == 0 }

// Float is the frame rate in frames per second.
func (f FrameRate) Float() float64 {
	if f.IsZero() {
		return 0
	}
	return float64(f.Num) / float64(f.Den)
}

// DASH formats the rate as the MPD FrameRateType: "25" or "30000/1001".
func (f FrameRate) DASH() string {
	if f.Den == 1 {
		return fmt.Sprint(f.Num)
	}
	return fmt.Sprintf("%d/%d", f.Num, f.Den)
}

// HLS formats the rate as EXT-X-STREAM-INF FRAME-RATE: a decimal with three places.
func (f FrameRate) HLS() string { return fmt.Sprintf("%.3f", f.Float()) }
