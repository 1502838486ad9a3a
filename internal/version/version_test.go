package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

func TestResolve(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.99",
		Main:      debug.Module{Path: "github.com/asya-sh/asya-sync", Version: "v0.2.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	dirty := &debug.BuildInfo{
		Main:     debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}},
	}
	for _, tc := range []struct {
		name            string
		version, commit string
		bi              *debug.BuildInfo
		want            Info
	}{
		{"link-time values win", "v1.0.0", "f00d", stamped, Info{"v1.0.0", "f00d", "go1.99"}},
		{"build info fills the gaps", "", "", stamped, Info{"v0.2.0", "abc123", "go1.99"}},
		{"a dirty checkout says so", "", "", dirty, Info{"devel", "abc123-dirty", runtime.Version()}},
		{"nothing known", "", "", nil, Info{"devel", "unknown", runtime.Version()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.version, tc.commit, tc.bi); got != tc.want {
				t.Errorf("resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{"v1.0.0", "f00d", "go1.99"}.String()
	if want := "asya-sync v1.0.0 (commit f00d, go1.99)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
