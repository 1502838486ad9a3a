//go:build e2e

package cost

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the fleet measurement reads of the machine's CPU: /proc and this
// process's own resource usage, Linux only like the rest of the tier.

// cpuUse is the CPU time (user and system) the processes of the fleet's
// parts have spent, by part: since they started, or over a window.
type cpuUse struct {
	window time.Duration
	at     time.Time
	by     map[string]time.Duration
}

// cpuParts names the processes of a fleet run by their command (the
// kernel keeps its first 15 bytes); the driver is this test process, read
// from its own resource usage.
var cpuParts = []struct{ name, comm string }{
	{"API server", "kube-apiserver"}, {"etcd", "etcd"}, {"driver", ""}, {"asya-sync", "asya-sync"},
	{"RabbitMQ", "beam.smp"}, {"garbage collector", "kube-controller"},
}

const cpuHeader = "| hook | round | window | API server | etcd | driver | asya-sync | RabbitMQ | garbage collector | the machine: busy, of its cores |\n" +
	"|---|---|---|---|---|---|---|---|---|---|"

func readCPU() *cpuUse {
	part := map[string]string{}
	for _, p := range cpuParts {
		if p.comm != "" {
			part[p.comm] = p.name
		}
	}
	out := &cpuUse{at: time.Now(), by: map[string]time.Duration{}}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		open, closing := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if err != nil || open < 0 || closing < open {
			continue
		}
		// After the command: state, then 10 fields, then utime and stime
		// in clock ticks (100 a second on Linux).
		f := strings.Fields(string(stat[closing+1:]))
		name, ok := part[string(stat[open+1:closing])]
		if !ok || len(f) < 13 {
			continue
		}
		user, _ := strconv.Atoi(f[11])
		sys, _ := strconv.Atoi(f[12])
		out.by[name] += time.Duration(user+sys) * 10 * time.Millisecond
	}
	var self syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil {
		out.by["driver"] = time.Duration(self.Utime.Nano() + self.Stime.Nano())
	}
	out.by[machine] = machineBusy()
	return out
}

// machine is the busy time of all the machine's cores, from /proc/stat.
const machine = "machine"

func machineBusy() time.Duration {
	stat, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	busy := 0
	for i, v := range f {
		if n, err := strconv.Atoi(v); err == nil && i != 4 && i != 5 {
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

func (c *cpuUse) since(before *cpuUse) *cpuUse {
	out := &cpuUse{window: c.at.Sub(before.at), at: c.at, by: map[string]time.Duration{}}
	for name, d := range c.by {
		out.by[name] = d - before.by[name]
	}
	return out
}

func (c *cpuUse) row(hook string, round int) string {
	cells := []string{}
	for _, p := range cpuParts {
		cells = append(cells, fmt.Sprintf("%.2f s", c.by[p.name].Seconds()))
	}
	busy := c.by[machine]
	return fmt.Sprintf("| %s | %d | %.1f s | %s | %.2f s, %.0f %% |", hook, round, c.window.Seconds(), strings.Join(cells, " | "),
		busy.Seconds(), 100*busy.Seconds()/(c.window.Seconds()*float64(runtime.NumCPU())))
}
