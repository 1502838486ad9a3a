package sync

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/budget"
)

// budgetDoc holds the budget: what each configuration asks Metacontroller
// to watch. Every related resource and child kind costs Metacontroller a
// cluster-wide watch (and a related one a pass over every actor per
// event), so adding one is a decision to record there, with its cost.
const budgetDoc = "../docs/performance.md"

// TestMetacontrollerBudget compares what the hook asks Metacontroller to
// watch with the budget documented in docs/performance.md.
func TestMetacontrollerBudget(t *testing.T) {
	rows, err := budget.Read(budgetDoc)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 2 {
		t.Fatalf("%s: want the budget table with at least the default and the leanest configuration, found %d rows", budgetDoc, len(rows))
	}
	for _, row := range rows {
		t.Run(row.Config, func(t *testing.T) {
			h := budgetHandler(t, row.Config)
			if diff := cmp.Diff(row.Related, relatedResources(t, h)); diff != "" {
				t.Errorf("customize asks for other related resources than %s budgets (-budget +code):\n%s", budgetDoc, diff)
			}
			if diff := cmp.Diff(row.Children, childResources(t, h)); diff != "" {
				t.Errorf("the hook answers with other child kinds than %s budgets (-budget +code):\n%s", budgetDoc, diff)
			}
		})
	}
}

// budgetHandler serves the golden configuration with the row's keys laid
// over it.
func budgetHandler(t *testing.T, keys string) *Handler {
	t.Helper()
	shared, err := os.ReadFile(caseConfig(casesDir + "/minimal"))
	if err != nil {
		t.Fatal(err)
	}
	var base, over map[string]any
	if err := yaml.Unmarshal(shared, &base); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(keys), &over); err != nil {
		t.Fatalf("budget configuration %q: %v", keys, err)
	}
	maps.Copy(base, over)
	merged, _ := json.Marshal(base)
	cfg, err := config.Parse(merged)
	if err != nil {
		t.Fatalf("budget configuration %q: %v", keys, err)
	}
	return &Handler{Config: cfg, Script: testScript, FlatScript: testFlatScript, Actors: noOtherActors{}, Secrets: secretsExist{}, Now: func() time.Time { return defaultNow }}
}

// budgetActors between them build every kind of child: a scaled
// Deployment whose transport needs a Secret (TriggerAuthentication), a
// StatefulSet, and an IRSA actor (ServiceAccount).
var budgetActors = []string{
	`{"transport": "rabbitmq", "scaling": {"enabled": true}}`,
	`{"transport": "rabbitmq", "workload": {"kind": "StatefulSet"}}`,
	`{"transport": "sqs-irsa", "scaling": {"enabled": true}}`,
}

func budgetActor(t *testing.T, spec string) *v1alpha1.AsyncActor {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatal(err)
	}
	workload, _ := s["workload"].(map[string]any)
	if workload == nil {
		workload = map[string]any{}
		s["workload"] = workload
	}
	workload["template"] = map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "asya-runtime", "image": "acme/echo:1"}}}}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": map[string]any{"name": "echo", "namespace": "ml", "uid": "1"}, "spec": s})
	actor, specErr, err := hook.DecodeParent(raw, nil)
	if err != nil || specErr != nil {
		t.Fatalf("%s: %v %v", spec, err, specErr)
	}
	return actor
}

func relatedResources(t *testing.T, h *Handler) []string {
	var out []string
	for _, spec := range budgetActors {
		for _, r := range h.Customize(&hook.CustomizeRequest{Actor: budgetActor(t, spec)}).RelatedResources {
			if !slices.Contains(out, r.Resource) {
				out = append(out, r.Resource)
			}
		}
	}
	slices.Sort(out)
	return out
}

func childResources(t *testing.T, h *Handler) []string {
	var out []string
	for _, spec := range budgetActors {
		kids, err := h.Render(budgetActor(t, spec))
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		for _, kid := range kids {
			r := strings.ToLower(fmt.Sprint(kid["kind"])) + "s"
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}
