package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// --clients takes headless or browser; anything else is refused before any work.
func TestLabCompareClients(t *testing.T) {
	var out, errb bytes.Buffer
	err := Lab(context.Background(), []string{"compare", "--clients", "vlc"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "want headless or browser") {
		t.Errorf("--clients vlc: %v", err)
	}
}
