package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestFlatDefaults: a flat spec gets the defaults of upstream's XRD, as the
// hook sees it; a nested spec gets none of them, which would make it look
// like a mix of both shapes.
func TestFlatDefaults(t *testing.T) {
	flat := func(c CurrentSpec) AsyncActorSpec {
		c.Actor, c.Image, c.Handler = "echo", "python:3.12", "echo.handle"
		return AsyncActorSpec{AsyaGeneration: Flat, CurrentSpec: c}
	}
	tests := []struct {
		name string
		spec AsyncActorSpec
		// runtime is the runtime container's pull policy in the model.
		runtime, want corev1.PullPolicy
	}{
		{"flat, unset", flat(CurrentSpec{}), corev1.PullIfNotPresent, corev1.PullIfNotPresent},
		{"flat, the user's kept", flat(CurrentSpec{ImagePullPolicy: corev1.PullAlways}), corev1.PullAlways, corev1.PullAlways},
		{"nested: no flat field set", AsyncActorSpec{Workload: WorkloadSpec{Template: PodTemplate{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: RuntimeContainer, Image: "python:3.12"}}}}}}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.spec.WithDefaults()
			if got.ImagePullPolicy != tc.want {
				t.Errorf("spec.imagePullPolicy = %q, want %q", got.ImagePullPolicy, tc.want)
			}
			if diff := cmp.Diff(tc.runtime, got.Workload.Template.Spec.Containers[0].ImagePullPolicy); diff != "" {
				t.Errorf("runtime container's imagePullPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRetryDefaults: resiliency.retry's fields default one by one once a
// retry is written, as the XRD's OpenAPI defaults apply, and the caller's
// actor is left as it was.
func TestRetryDefaults(t *testing.T) {
	defaults := &Retry{Policy: "exponential", MaxAttempts: ptr.To[int32](3), InitialInterval: "1s", MaxInterval: "300s",
		BackoffCoefficient: "2", Jitter: ptr.To(true)}
	tests := []struct {
		name string
		in   *Resiliency
		want *Resiliency
	}{
		{"no resiliency", nil, nil},
		{"no retry: none made up", &Resiliency{ActorTimeout: "30s"}, &Resiliency{ActorTimeout: "30s"}},
		{"1.x policies: no retry made up", &Resiliency{Rules: []ResiliencyRule{{Errors: []string{"E"}, Policy: "p"}}},
			&Resiliency{Rules: []ResiliencyRule{{Errors: []string{"E"}, Policy: "p"}}}},
		{"retry {}: every default", &Resiliency{Retry: &Retry{}}, &Resiliency{Retry: defaults}},
		{"the user's values kept, zero and false included",
			&Resiliency{Retry: &Retry{Policy: "constant", MaxAttempts: ptr.To[int32](0), BackoffCoefficient: "1.5", Jitter: ptr.To(false)},
				NonRetryableErrors: []string{"ValueError"}},
			&Resiliency{Retry: &Retry{Policy: "constant", MaxAttempts: ptr.To[int32](0), InitialInterval: "1s", MaxInterval: "300s",
				BackoffCoefficient: "1.5", Jitter: ptr.To(false)}, NonRetryableErrors: []string{"ValueError"}}},
		{"intervals kept", &Resiliency{Retry: &Retry{InitialInterval: "500ms", MaxInterval: "5m"}},
			&Resiliency{Retry: &Retry{Policy: "exponential", MaxAttempts: ptr.To[int32](3), InitialInterval: "500ms", MaxInterval: "5m",
				BackoffCoefficient: "2", Jitter: ptr.To(true)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := AsyncActorSpec{AsyaGeneration: Flat, CurrentSpec: CurrentSpec{Actor: "echo", Image: "i", Handler: "m.f", Resiliency: tc.in}}
			before := jsonCopy(t, spec.Resiliency)
			got := spec.WithDefaults()
			if diff := cmp.Diff(tc.want, got.Resiliency); diff != "" {
				t.Errorf("resiliency (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, spec.Resiliency); diff != "" {
				t.Errorf("the caller's resiliency changed (-before +after):\n%s", diff)
			}
		})
	}
}

// jsonCopy is a deep copy of r.
func jsonCopy(t *testing.T, r *Resiliency) *Resiliency {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out *Resiliency
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A flat actor's spec.sidecar.image names its sidecar, except where it
// holds what upstream's XRDs write into a claim that names none: then the
// service's flat sidecar runs, as upstream's compositions ran the
// installation's.
func TestFlatSidecarImage(t *testing.T) {
	for _, tc := range []struct {
		name, sidecar string // spec.sidecar as JSON
		want          string // Reference(); "" is the service's flat sidecar
		wantPull      string
	}{
		{"none", `{}`, "", "IfNotPresent"},
		{"0.5 XRD default", `{"image":"ghcr.io/deliveryhero/asya-sidecar:latest"}`, "", "IfNotPresent"},
		{"1.x XRD default", `{"image":{"repository":"ghcr.io/deliveryhero/asya-sidecar"}}`, "", "IfNotPresent"},
		{"1.x XRD default with a pull policy", `{"image":{"repository":"ghcr.io/deliveryhero/asya-sidecar","pullPolicy":"Always"}}`, "", "Always"},
		{"a release", `{"image":"ghcr.io/deliveryhero/asya-sidecar:0.5.3"}`, "ghcr.io/deliveryhero/asya-sidecar:0.5.3", "IfNotPresent"},
		{"a release, 1.x form", `{"image":{"repository":"ghcr.io/deliveryhero/asya-sidecar","tag":"1.1.2"}}`,
			"ghcr.io/deliveryhero/asya-sidecar:1.1.2", "IfNotPresent"},
		{"latest of another repository", `{"image":"registry.acme.io/asya-sidecar:latest"}`, "registry.acme.io/asya-sidecar:latest", "IfNotPresent"},
		{"a digest", `{"image":"ghcr.io/deliveryhero/asya-sidecar@sha256:0123"}`, "ghcr.io/deliveryhero/asya-sidecar@sha256:0123", "IfNotPresent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec AsyncActorSpec
			raw := `{"actor":"a","image":"i","handler":"m.f","sidecar":` + tc.sidecar + `}`
			if err := json.Unmarshal([]byte(raw), &spec); err != nil {
				t.Fatal(err)
			}
			spec.AsyaGeneration = Flat
			got := spec.WithDefaults().Sidecar
			if ref := got.Image.Reference(); ref != tc.want {
				t.Errorf("sidecar image %q, want %q", ref, tc.want)
			}
			if string(got.ImagePullPolicy) != tc.wantPull {
				t.Errorf("sidecar imagePullPolicy %q, want %q", got.ImagePullPolicy, tc.wantPull)
			}
		})
	}
	// The nested shape has no XRD: what it names is run.
	nested := AsyncActorSpec{Sidecar: SidecarSpec{Image: SidecarImage{Ref: "ghcr.io/deliveryhero/asya-sidecar:latest"}}}
	if ref := nested.WithDefaults().Sidecar.Image.Reference(); ref != "ghcr.io/deliveryhero/asya-sidecar:latest" {
		t.Errorf("nested actor's sidecar %q, want the one it names", ref)
	}
}
