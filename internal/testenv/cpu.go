package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pidCPU is a process's user and system time so far, in seconds; 0 when
// it cannot be read.
func pidCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (in parentheses): utime and stime are the
	// 12th and 13th, in clock ticks (100 a second on Linux).
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100
}

// RabbitCPU reads the CPU time so far, in seconds, of the RabbitMQ node
// running on this machine (the Erlang VM booting rabbit); ok is false
// when there is none: a broker elsewhere cannot be read.
func RabbitCPU() (cpu func() float64, ok bool) {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if args := string(cmd); strings.Contains(args, "beam.smp") && strings.Contains(args, "\x00rabbit\x00boot") {
			return func() float64 { return pidCPU(pid) }, true
		}
	}
	return nil, false
}
