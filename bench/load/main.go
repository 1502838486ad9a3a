// Command load drives `asya-sync serve` over HTTP the way Metacontroller's
// workers do: a fixed number of clients post one sync request back to back
// for a fixed time. It prints one Markdown table row per run: syncs per
// second, p50 and p99 latency, the server's peak RSS, and the throughput
// metric syncs/s × json.Valid time ÷ cores, with json.Valid of the same
// body timed in this process just before.
//
// With -etag the clients send the ETag of the previous answer in
// If-None-Match, as Metacontroller's webhook etag cache does, and count
// the bytes the 304s spared.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/asya-sync", "asya-sync binary")
	configPath := flag.String("config", "bench/config.yaml", "service configuration")
	request := flag.String("request", "testdata/sync/realistic/request.json", "sync request body")
	clients := flag.Int("c", 8, "concurrent clients")
	duration := flag.Duration("d", 20*time.Second, "how long to load")
	withETag := flag.Bool("etag", false, "send If-None-Match with the previous answer's ETag")
	header := flag.Bool("header", false, "print the table header first")
	flag.Parse()
	if err := run(*bin, *configPath, *request, *clients, *duration, *withETag, *header); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(bin, configPath, request string, clients int, duration time.Duration, withETag, header bool) error {
	body, err := os.ReadFile(request)
	if err != nil {
		return err
	}
	floor := jsonValid(body)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	srv := exec.Command(bin, "serve", "--config", configPath, "--listen", addr)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	url := "http://" + addr + "/sync"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
	if err := waitReady(client, "http://"+addr+"/readyz"); err != nil {
		return err
	}
	// Warm up: the first sync ensures the queue; later ones find it cached.
	first, err := post(client, url, body, "")
	if err != nil {
		return err
	}
	serverCPU0, err := processCPU(srv.Process.Pid)
	if err != nil {
		return err
	}
	selfCPU0 := selfCPU()
	res := load(client, url, body, clients, duration, withETag, first)
	if res.err != nil {
		return res.err
	}
	serverCPU1, err := processCPU(srv.Process.Pid)
	if err != nil {
		return err
	}
	selfCPU := selfCPU() - selfCPU0
	serverCPU := serverCPU1 - serverCPU0
	rss, err := peakRSS(srv.Process.Pid)
	if err != nil {
		return err
	}
	rate := float64(len(res.latencies)) / duration.Seconds()
	slices.Sort(res.latencies)
	mode := "200"
	if withETag {
		mode = "304 (ETag)"
	}
	if header {
		fmt.Println("| load | answers | syncs/s | p50 | p99 | peak RSS | json.Valid | syncs/s × json.Valid ÷ cores | response bytes | CPU per sync: server, clients |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	}
	n := time.Duration(max(len(res.latencies), 1))
	fmt.Printf("| %d clients, %s, %d-byte request | %s | %.0f | %s | %s | %.0f MB | %s | %.3f | %d | %s, %s |\n",
		clients, duration, len(body), mode, rate,
		ms(percentile(res.latencies, 50)), ms(percentile(res.latencies, 99)), float64(rss)/(1<<20),
		ms(floor), rate*floor.Seconds()/float64(runtime.NumCPU()), res.bytes/int64(n),
		ms(serverCPU/n), ms(selfCPU/n))
	return nil
}

// jsonValid is the floor: the time json.Valid takes on the body.
func jsonValid(body []byte) time.Duration {
	r := testing.Benchmark(func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if !json.Valid(body) {
				b.Fatal("request is not valid JSON")
			}
		}
	})
	return time.Duration(r.NsPerOp())
}

type result struct {
	latencies []time.Duration
	bytes     int64
	err       error
}

func load(client *http.Client, url string, body []byte, clients int, duration time.Duration, withETag bool, first answer) result {
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var mu sync.Mutex
	var all result
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine result
			tag := ""
			if withETag {
				tag = first.etag
			}
			for ctx.Err() == nil {
				start := time.Now()
				a, err := post(client, url, body, tag)
				if err != nil {
					if ctx.Err() == nil {
						mine.err = err
					}
					break
				}
				if withETag && a.code != http.StatusNotModified {
					mine.err = fmt.Errorf("If-None-Match %s answered %d", tag, a.code)
					break
				}
				mine.latencies = append(mine.latencies, time.Since(start))
				mine.bytes += int64(a.size)
			}
			mu.Lock()
			all.latencies = append(all.latencies, mine.latencies...)
			all.bytes += mine.bytes
			all.err = errors.Join(all.err, mine.err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}

type answer struct {
	code int
	etag string
	size int
}

func post(client *http.Client, url string, body []byte, ifNoneMatch string) (answer, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: resp.StatusCode, etag: resp.Header.Get("ETag"), size: int(n)}
	if a.code != http.StatusOK && a.code != http.StatusNotModified {
		return a, fmt.Errorf("POST /sync: HTTP %d", a.code)
	}
	return a, nil
}

func waitReady(client *http.Client, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("asya-sync did not become ready in 30 s")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// processCPU is the user and system CPU time the process has used.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses: utime
	// and stime are the 12th and 13th, in clock ticks (100 per second on
	// Linux).
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, errors.New("unexpected /proc stat")
	}
	var ticks int64
	for _, f := range fields[11:13] {
		t, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += t
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// selfCPU is the user and system CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's high-water resident set (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)*p/100, len(sorted)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
