package layout

// Parsed is a request path with its Resource, parsed once per request and carried
// through the origin's handler chain on the response writer, so that the lean
// HTTP/1.1 path, the metrics and the push planner do not each parse it again.
type Parsed struct {
	Path string
	Res  Resource
}

// ParsedCarrier is a response writer that carries its request's path parsed (the
// origin's lean HTTP/1.1 writer and its metrics recorder). The pointer is the
// writer's own field: no allocation per request.
type ParsedCarrier interface{ ParsedPath() *Parsed }

// ParseFor is Parse(path), taken from w when w is a ParsedCarrier holding the same
// path parsed. A writer that carries nothing, or another path (a middleware that
// rewrote the request's URL), makes it parse: the answer is always Parse(path).
func ParseFor(w any, path string) Resource {
	if c, ok := w.(ParsedCarrier); ok {
		if p := c.ParsedPath(); p != nil && p.Path == path {
			return p.Res
		}
	}
	return Parse(path)
}
