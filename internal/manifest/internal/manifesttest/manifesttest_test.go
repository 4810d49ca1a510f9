package manifesttest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// outcomeTB records how a helper ended a test: Fatal, Skip or neither.
type outcomeTB struct {
	testing.TB
	how, msg string
}

type stopped struct{}

func (o *outcomeTB) Helper() {}
func (o *outcomeTB) Fatal(args ...any) {
	o.how, o.msg = "fatal", fmt.Sprint(args...)
	panic(stopped{})
}
func (o *outcomeTB) Fatalf(f string, args ...any) { o.Fatal(fmt.Sprintf(f, args...)) }
func (o *outcomeTB) Skip(args ...any) {
	o.how, o.msg = "skip", fmt.Sprint(args...)
	panic(stopped{})
}

func run(fn func(tb testing.TB)) (o *outcomeTB) {
	o = &outcomeTB{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
		}
	}()
	fn(o)
	return o
}

// A missing schema fails on CI and when named explicitly, and skips loudly elsewhere.
func TestSchemaMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "DASH-MPD.xsd")
	cases := []struct {
		name, ci, env, how, says string
	}{
		{"clone without ../shared", "", "", "skip", "SKIPPED"},
		{"CI", "true", "", "fatal", "CI=true requires it"},
		{"named but absent", "", missing, "fatal", missing},
		{"named but absent on CI", "true", missing, "fatal", missing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CI", c.ci)
			t.Setenv(SchemaEnv, c.env)
			path := ""
			if c.env != "" {
				p, ok := SchemaPath()
				if ok || p != missing {
					t.Fatalf("SchemaPath() = %q, %v; want %q, false", p, ok, missing)
				}
				path = p
			}
			o := run(func(tb testing.TB) { schemaMissing(tb, path) })
			if o.how != c.how || !strings.Contains(o.msg, c.says) {
				t.Errorf("%s (%q); want %s saying %q", o.how, o.msg, c.how, c.says)
			}
		})
	}
}
