package manifest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

// TemplateValues are the values of the DASH SegmentTemplate identifiers of one segment.
type TemplateValues struct {
	RepresentationID string // $RepresentationID$
	Number           uint64 // $Number$
	Time             uint64 // $Time$ (media time in the track timescale)
	Bandwidth        int    // $Bandwidth$
	// Only, when not zero, names the identifiers to substitute: the others, and $$,
	// stay as they are, so a template can be expanded per representation first
	// (a player parsing an MPD) and per segment later.
	Only Identifiers
}

// Identifiers is a set of SegmentTemplate identifiers.
type Identifiers uint8

const (
	IdentRepresentationID Identifiers = 1 << iota
	IdentNumber
	IdentTime
	IdentBandwidth
)

// ExpandTemplate substitutes the DASH identifiers in tmpl as ISO/IEC 23009-1 5.3.9.4.4
// defines them: $$ is a literal $, and $Number$, $Time$ and $Bandwidth$ take an
// optional printf width tag, as in $Number%05d$. Unknown identifiers are an error.
func ExpandTemplate(tmpl string, v TemplateValues) (string, error) {
	var b strings.Builder
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		rest = rest[i+1:]
		j := strings.IndexByte(rest, '$')
		if j < 0 {
			return "", fmt.Errorf("template %q: unterminated $ identifier: %w", tmpl, media.ErrInvalidMedia)
		}
		ident := rest[:j]
		rest = rest[j+1:]
		if ident == "" {
			if v.Only != 0 {
				b.WriteString("$$")
			} else {
				b.WriteByte('$')
			}
			continue
		}
		name, format, hasFormat := strings.Cut(ident, "%")
		if v.Only != 0 && v.Only&identifierOf(name) == 0 {
			b.WriteString("$" + ident + "$")
			continue
		}
		width := 0
		if hasFormat {
			w, ok := parseWidth(format)
			if !ok || name == "RepresentationID" {
				return "", fmt.Errorf("template %q: bad format tag in $%s$: %w", tmpl, ident, media.ErrInvalidMedia)
			}
			width = w
		}
		var s string
		switch name {
		case "RepresentationID":
			s = v.RepresentationID
		case "Number":
			s = strconv.FormatUint(v.Number, 10)
		case "Time":
			s = strconv.FormatUint(v.Time, 10)
		case "Bandwidth":
			s = strconv.Itoa(v.Bandwidth)
		default:
			return "", fmt.Errorf("template %q: unknown identifier $%s$: %w", tmpl, ident, media.ErrInvalidMedia)
		}
		for n := len(s); n < width; n++ {
			b.WriteByte('0')
		}
		b.WriteString(s)
	}
}

func identifierOf(name string) Identifiers {
	switch name {
	case "RepresentationID":
		return IdentRepresentationID
	case "Number":
		return IdentNumber
	case "Time":
		return IdentTime
	case "Bandwidth":
		return IdentBandwidth
	}
	return 0
}

// parseWidth reads the "0Nd" of a %0Nd format tag (the leading 0 is mandatory in DASH).
func parseWidth(f string) (int, bool) {
	if len(f) < 3 || f[0] != '0' || f[len(f)-1] != 'd' {
		return 0, false
	}
	w, err := strconv.Atoi(f[1 : len(f)-1])
	if err != nil || w < 1 || w > 32 {
		return 0, false
	}
	return w, true
}

// UsesIdentifier reports whether tmpl refers to the identifier name ("Number", "Time", ...).
func UsesIdentifier(tmpl, name string) bool {
	return strings.Contains(tmpl, "$"+name+"$") || strings.Contains(tmpl, "$"+name+"%")
}
