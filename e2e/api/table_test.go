//go:build e2e

package api

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

var headerCell = regexp.MustCompile(`\S+`)

// columns splits kubectl's table output into header and rows, cutting each
// row at the header's column offsets so that empty cells stay in place.
func columns(out string) (header []string, rows map[string][]string) {
	rows = map[string][]string{}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	starts := headerCell.FindAllStringIndex(lines[0], -1)
	for _, s := range starts {
		header = append(header, lines[0][s[0]:s[1]])
	}
	for _, line := range lines[1:] {
		cells := make([]string, len(starts))
		for i, s := range starts {
			if s[0] >= len(line) {
				break
			}
			end := len(line)
			if i+1 < len(starts) && starts[i+1][0] < end {
				end = starts[i+1][0]
			}
			cells[i] = strings.TrimSpace(line[s[0]:end])
		}
		rows[cells[0]] = cells
	}
	return header, rows
}

// runPods makes the actor's workload look the way a healthy cluster would
// report it: ready pods labelled for the actor, and a Deployment status
// that has caught up. Nothing in the test cluster runs pods, so the test
// writes what the kubelet and the Deployment controller would.
func runPods(t *testing.T, ns, name string, n int) {
	t.Helper()
	ctx := testenv.CtxFor(t, time.Minute)
	k := env.Cluster.Client
	dep, err := k.ByKind(ctx, "apps/v1", "Deployment")
	if err != nil {
		t.Fatal(err)
	}
	d, err := k.Get(ctx, dep, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	podSpec := testenv.MapAt(d, "spec", "template", "spec")
	var containerStatuses []any
	for _, c := range podSpec["containers"].([]any) {
		containerStatuses = append(containerStatuses, testenv.Obj{
			"name": testenv.Str(c.(testenv.Obj), "name"), "image": testenv.Str(c.(testenv.Obj), "image"), "imageID": "",
			"ready": true, "started": true, "restartCount": 0,
			"state": testenv.Obj{"running": testenv.Obj{"startedAt": time.Now().UTC().Format(time.RFC3339)}},
		})
	}
	podGVR, _ := k.ByKind(ctx, "v1", "Pod")
	labels := testenv.MapAt(d, "spec", "template", "metadata", "labels")
	for i := 0; i < n; i++ {
		pod := testenv.Obj{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": testenv.Obj{"name": fmt.Sprintf("%s-%d", name, i), "namespace": ns, "labels": labels},
			"spec":     podSpec,
		}
		created, err := k.Create(ctx, pod, false)
		if err != nil {
			t.Fatalf("pod: %v", err)
		}
		now := time.Now().UTC().Format(time.RFC3339)
		created["status"] = testenv.Obj{
			"phase": "Running",
			"conditions": []any{
				testenv.Obj{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
				testenv.Obj{"type": "Initialized", "status": "True", "lastTransitionTime": now},
				testenv.Obj{"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
				testenv.Obj{"type": "Ready", "status": "True", "lastTransitionTime": now},
			},
			"containerStatuses": containerStatuses,
			"startTime":         now,
		}
		if _, err := k.Do(ctx, "PUT", podGVR.Path(ns, testenv.Str(created, "metadata", "name"))+"/status", created, ""); err != nil {
			t.Fatalf("pod status: %v", err)
		}
	}
	gen := testenv.Field(d, "metadata", "generation")
	d["status"] = testenv.Obj{
		"observedGeneration": gen, "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n,
		"conditions": []any{testenv.Obj{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
			"lastUpdateTime": time.Now().UTC().Format(time.RFC3339), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
	}
	if _, err := k.Do(ctx, "PUT", dep.Path(ns, name)+"/status", d, ""); err != nil {
		t.Fatalf("deployment status: %v", err)
	}
}

// TestKubectlGetAsya checks the printer columns, normal and wide, through
// kubectl and through the API's Table output, on an actor whose two pods
// are ready, and on a flat actor, whose spec names the bounds otherwise
// and has no workload kind: Min, Max and Workload read the status, which
// says them for both shapes.
func TestKubectlGetAsya(t *testing.T) {
	ctx := testenv.CtxFor(t, 2*time.Minute)
	ns := "e2e-table"
	testenv.EnsureNamespace(t, ctx, ns, true)
	a := testenv.LoadActor(t, filepath.Join(env.Root, "e2e", "testdata", "actors", "manual.yaml"), ns)
	testenv.MapAt(a, "metadata")["name"] = "shown"
	testenv.MapAt(a, "spec")["transport"] = "rabbitmq"
	createActor(t, ctx, a)
	runPods(t, ns, "shown", 2)
	createActor(t, ctx, testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": testenv.Obj{"name": "shown-flat", "namespace": ns},
		"spec": testenv.Obj{"actor": "tabled", "image": "python:3.12-slim", "handler": "handlers.echo",
			"scaling": testenv.Obj{"enabled": false, "maxReplicaCount": 4}}})
	// docs/design.md#scale: an actor whose children exist and are healthy settles after
	// at most one status write.
	writes := 0
	for _, p := range converge(t, ctx, ns, "shown") {
		if p.StatusWritten {
			writes++
		}
	}
	if writes > 1 {
		t.Errorf("%d status writes to settle a healthy actor; want at most 1", writes)
	}
	st := testenv.MapAt(testenv.GetActor(t, ctx, ns, "shown"), "status")
	if testenv.Str(st, "status") != "Running" {
		t.Errorf("status.status = %q with 2/2 pods ready; status %s", testenv.Str(st, "status"), testenv.MustJSON(st))
	}

	header, rows := columns(testenv.Kubectl(t, "get", "asya", "-n", ns))
	wantHeader := []string{"NAME", "STATUS", "RUNNING", "FAILING", "TOTAL", "DESIRED", "MIN", "MAX", "LAST-SCALE", "AGE"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") {
		t.Errorf("kubectl get asya header = %v, want %v", header, wantHeader)
	}
	row := rows["shown"]
	t.Logf("kubectl get asya: %v", row)
	if len(row) != len(wantHeader) {
		t.Fatalf("row %v does not fit header", row)
	}
	// Min and Max with the 0.3 defaults, as the Asya operator showed them:
	// its CRD defaulted spec.scaling, which it wrote back on its first
	// update of every actor.
	expect := map[string]string{"STATUS": testenv.Str(st, "status"), "RUNNING": "2", "FAILING": "0", "TOTAL": "2", "DESIRED": "2", "MIN": "0", "MAX": "50"}
	for i, h := range wantHeader {
		if w, ok := expect[h]; ok && row[i] != w {
			t.Errorf("column %s = %q, want %q", h, row[i], w)
		}
	}
	flatRow := rows["shown-flat"]
	t.Logf("kubectl get asya, flat actor: %v", flatRow)
	for i, h := range wantHeader {
		if w, ok := map[string]string{"MIN": "0", "MAX": "4"}[h]; ok && (i >= len(flatRow) || flatRow[i] != w) {
			t.Errorf("flat actor's column %s = %q, want %q", h, flatRow, w)
		}
	}

	header, rows = columns(testenv.Kubectl(t, "get", "asyncactor", "-n", ns, "-o", "wide"))
	wantWide := append(append([]string{}, wantHeader...), "WORKLOAD", "TRANSPORT", "SCALING", "QUEUED", "PROCESSING", "DIRECTION", "ACTOR", "QUEUE", "UNROUTABLE")
	if strings.Join(header, " ") != strings.Join(wantWide, " ") {
		t.Errorf("kubectl get asya -o wide header = %v, want %v", header, wantWide)
	}
	row = rows["shown"]
	t.Logf("kubectl get asya -o wide: %v", row)
	if len(row) < 13 {
		t.Fatalf("wide row %v too short", row)
	}
	for i, w := range map[int]string{10: "Deployment", 11: "Ready", 12: "Manual"} {
		if row[i] != w {
			t.Errorf("wide column %s = %q, want %q", wantWide[i], row[i], w)
		}
	}
	flatRow = rows["shown-flat"]
	t.Logf("kubectl get asya -o wide, flat actor: %v", flatRow)
	if len(flatRow) != len(wantWide) {
		t.Fatalf("flat actor's wide row %v does not fit the header", flatRow)
	}
	for i, w := range map[int]string{6: "0", 7: "4", 10: "Deployment", 11: "Ready", 12: "Manual", 16: "tabled", 17: "asya-" + ns + "-tabled", 18: "0"} {
		if flatRow[i] != w {
			t.Errorf("flat actor's wide column %s = %q, want %q", wantWide[i], flatRow[i], w)
		}
	}

	// The same through the API's Table output, as any client sees it.
	data, status, err := env.Cluster.Client.Raw(ctx, "GET", testenv.ActorGVR().Path(ns, ""), nil, "",
		"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if err != nil || status != 200 {
		t.Fatalf("table: %d %v %s", status, err, testenv.FirstLine(data))
	}
	var table struct {
		ColumnDefinitions []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Priority int    `json:"priority"`
		} `json:"columnDefinitions"`
		Rows []struct {
			Cells []any `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range table.ColumnDefinitions {
		got = append(got, fmt.Sprintf("%s:%s:%d", c.Name, c.Type, c.Priority))
	}
	want := "Name:string:0 Status:string:0 Running:integer:0 Failing:integer:0 Total:integer:0 Desired:integer:0 Min:integer:0 Max:integer:0 Last-Scale:date:0 Age:date:0 " +
		"Workload:string:1 Transport:string:1 Scaling:string:1 Queued:integer:1 Processing:integer:1 Direction:string:1 Actor:string:1 Queue:string:1 " +
		"Unroutable:integer:1"
	if strings.Join(got, " ") != want {
		t.Errorf("table columns:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	cells := map[string][]any{}
	for _, r := range table.Rows {
		cells[fmt.Sprint(r.Cells[0])] = r.Cells
	}
	if len(cells) != 2 || fmt.Sprint(cells["shown"][2]) != "2" || fmt.Sprint(cells["shown"][6:8]) != "[0 50]" ||
		fmt.Sprint(cells["shown-flat"][6:8]) != "[0 4]" || cells["shown-flat"][10] != "Deployment" {
		t.Errorf("table rows: %s", testenv.MustJSON(table.Rows))
	}

	// Short names.
	for _, short := range []string{"asyas", "asyncactor", "asyncactors.asya.sh"} {
		if out := testenv.Kubectl(t, "get", short, "shown", "-n", ns, "-o", "name"); strings.TrimSpace(out) != "asyncactor.asya.sh/shown" {
			t.Errorf("kubectl get %s -o name = %q", short, out)
		}
	}
}
