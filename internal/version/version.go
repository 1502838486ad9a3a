// Package version says which build of asya-sync is running.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time, e.g.
//
//	go build -ldflags "-X github.com/asya-sh/asya-sync/internal/version.version=v0.3.0 \
//	  -X github.com/asya-sh/asya-sync/internal/version.commit=$(git rev-parse HEAD)"
//
// Left empty, they come from the module and VCS information the Go
// toolchain embeds (go install module@version, or a build in a git checkout).
var (
	version string
	commit  string
)

// Info is one build's identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, bi)
}

// resolve prefers the link-time values, then the embedded build info.
func resolve(version, commit string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Commit == "" {
			info.Commit = vcsCommit(bi.Settings)
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// vcsCommit is the revision the toolchain stamped, marked when the tree
// had uncommitted changes.
func vcsCommit(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "-dirty"
	}
	return rev
}

func (i Info) String() string {
	return fmt.Sprintf("asya-sync %s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}
