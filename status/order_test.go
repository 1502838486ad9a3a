package status

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestOrderDecides: of two statuses that both apply, the one earlier in
// Order is the actor's, at each step where the order was ever in doubt.
func TestOrderDecides(t *testing.T) {
	for _, tc := range []struct {
		first, then string
		in          func(*testing.T) Input
	}{
		{Terminating, TransportError, func(*testing.T) Input {
			in := input()
			in.Actor.DeletionTimestamp = ptr(mtime("03:19:00"))
			in.Queue = QueueState{Reason: "BrokerUnavailable", Message: "down"}
			return in
		}},
		{TransportError, RuntimeError, func(t *testing.T) Input {
			in := input()
			in.Workload = deployment(0, 1)
			in.Pods = pods(t, "runtime-crashloop")
			in.Queue = QueueState{Reason: "BrokerUnavailable", Message: "down"}
			return in
		}},
		// Errors known before any workload exists are not hidden by Creating.
		{WorkloadError, Creating, func(*testing.T) Input {
			in := input()
			in.SpecProblems = []string{"spec.workload.template: no runtime container"}
			return in
		}},
		{ConfigError, Creating, func(*testing.T) Input {
			in := input()
			in.MissingSecrets = []string{"rabbitmq-secret"}
			return in
		}},
		// KEDA may complain until the workload it scales exists.
		{Creating, ScalingError, func(*testing.T) Input {
			in := input()
			in.Actor.Spec.Scaling.Enabled = ptr(true)
			in.KEDAMissing = true
			return in
		}},
		{ScalingError, Running, func(t *testing.T) Input {
			in := runningTwo(t)
			in.Actor.Spec.Scaling.Enabled = ptr(true)
			in.KEDAMissing = true
			return in
		}},
	} {
		t.Run(tc.first+" before "+tc.then, func(t *testing.T) {
			if i, j := slices.Index(Order, tc.first), slices.Index(Order, tc.then); i < 0 || j < 0 || i >= j {
				t.Fatalf("Order puts %s at %d and %s at %d", tc.first, i, tc.then, j)
			}
			if got := Compute(tc.in(t)).Status.Status; got != tc.first {
				t.Errorf("status %s, want %s", got, tc.first)
			}
		})
	}
}

// TestOrderIsEveryStatusOnce: Order holds each status value exactly once.
func TestOrderIsEveryStatusOnce(t *testing.T) {
	all := []string{Terminating, Creating, TransportError, ImagePullError, RuntimeError, SidecarError,
		PendingResources, VolumeError, ConfigError, WorkloadError, ScalingError, Napping, ScalingUp, ScalingDown,
		Updating, Degraded, Running}
	got := slices.Sorted(slices.Values(Order))
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Errorf("Order holds %v, want each of %v once", Order, all)
	}
}

// TestCRDListsStatusesInOrder: the description kubectl explain prints for
// status.status, in the CRD of manifests/ and of the chart, lists the
// values in Order, and so does docs/design.md#status.
func TestCRDListsStatusesInOrder(t *testing.T) {
	for _, crd := range []string{"manifests/crd/asya.sh_asyncactors.yaml", "chart/crds/asya.sh_asyncactors.yaml"} {
		t.Run(crd, func(t *testing.T) {
			desc := strings.Join(strings.Fields(statusDescription(t, filepath.Join("..", crd))), " ")
			_, list, ok := strings.Cut(desc, "the first that applies of:")
			if !ok {
				t.Fatalf("status.status description does not list the values:\n%s", desc)
			}
			if got := statusWords(list); !slices.Equal(got, Order) {
				t.Errorf("kubectl explain lists %v,\nthe code chooses in %v\n(change api/v1alpha1's comment and run .ci/e2e.sh manifests)", got, Order)
			}
		})
	}
	t.Run("docs/design.md", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join("..", "docs", "design.md"))
		if err != nil {
			t.Fatal(err)
		}
		_, section, _ := strings.Cut(string(data), "\n## Status\n")
		_, list, _ := strings.Cut(section, "applies:\n")
		list, _, _ = strings.Cut(list, "\n\n")
		if got := statusWords(list); !slices.Equal(got, Order) {
			t.Errorf("docs/design.md#status lists %v,\nthe code chooses in %v", got, Order)
		}
	})
}

// statusWords are the status values named in text, in the order named.
func statusWords(text string) []string {
	var out []string
	for _, w := range regexp.MustCompile(`[A-Za-z]+`).FindAllString(text, -1) {
		if slices.Contains(Order, w) {
			out = append(out, w)
		}
	}
	return out
}

// statusDescription is the CRD's description of .status.status.
func statusDescription(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Description string `json:"description"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s: %d versions", path, len(crd.Spec.Versions))
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["status"].Description
}
