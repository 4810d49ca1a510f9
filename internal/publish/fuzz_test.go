package publish

import "testing"

// The API's bodies come from outside: any bytes give a request or an error, and a
// decoded request either resolves or is refused, never panics.
func FuzzAPIBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"news","preset":"pure-live"}`, `{"name":"a","dvr_window_length":30,"hls_fmp4":false}`,
		`{"name":"a","archive_length":"1e9h"}`, `{}`, `[]`, `{"name":"a"}{}`, `{"preset":"archive","archiving":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req CreateRequest
		if err := DecodeJSON(b, &req); err != nil {
			return
		}
		o, err := Resolve(req.Preset, req.Options)
		if err == nil && o.Validate() != nil {
			t.Fatalf("Resolve accepted options Validate refuses: %+v", o)
		}
		var p PatchRequest
		_ = DecodeJSON(b, &p)
	})
}
