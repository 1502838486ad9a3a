//go:build e2e

package testenv

import "time"

// What the fleet measurement (e2e/cost) reads of the client and the driver.

// Snapshot is a copy of the request counts.
func (k *Kube) Snapshot() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for v, n := range k.Counts {
		out[v] = n
	}
	return out
}

// LastWriteTime is when the client last wrote.
func (k *Kube) LastWriteTime() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastWrite
}

// HookStats are the calls of each hook so far, by hook.
func (d *Driver) HookStats() map[string]HookStats {
	out := map[string]HookStats{}
	for h, w := range d.Hooks {
		out[h] = w.Snapshot()
	}
	return out
}
