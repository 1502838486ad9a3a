package sync

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/transport/pubsub"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
	"github.com/asya-sh/asya-sync/transport/sqs"
)

func TestValidate(t *testing.T) {
	runtime := corev1.Container{Name: "asya-runtime", Image: "python:3.12"}
	rabbit := config.Transport{Name: "mq", Enabled: true, Kind: &rabbitmq.Settings{}}
	irsa := config.Transport{Name: "aws", Enabled: true, Kind: &sqs.Settings{ActorRoleArn: "arn:aws:iam::1:role/r"}}
	tests := []struct {
		name      string
		edit      func(*v1alpha1.AsyncActorSpec)
		transport config.Transport
		want      []string
	}{
		{"valid", func(*v1alpha1.AsyncActorSpec) {}, rabbit, nil},
		{"no runtime container", func(s *v1alpha1.AsyncActorSpec) { s.Workload.Template.Spec.Containers[0].Name = "app" }, rabbit,
			[]string{"containers: exactly one container must be named asya-runtime, found none"}},
		{"two runtime containers", func(s *v1alpha1.AsyncActorSpec) {
			s.Workload.Template.Spec.Containers = append(s.Workload.Template.Spec.Containers, runtime)
		}, rabbit, []string{"found 2"}},
		{"runtime command", func(s *v1alpha1.AsyncActorSpec) { s.Workload.Template.Spec.Containers[0].Command = []string{"python"} }, rabbit,
			[]string{"containers[0] (asya-runtime): command must not be set"}},
		{"sidecar container", func(s *v1alpha1.AsyncActorSpec) {
			s.Workload.Template.Spec.Containers = append(s.Workload.Template.Spec.Containers, corev1.Container{Name: "asya-sidecar"})
		}, rabbit, []string{"containers[1]: the name asya-sidecar is reserved"}},
		{"sidecar init container", func(s *v1alpha1.AsyncActorSpec) {
			s.Workload.Template.Spec.InitContainers = []corev1.Container{{Name: "asya-sidecar"}}
		}, rabbit, []string{"initContainers[0]: the name asya-sidecar is reserved"}},
		{"runtime writer init container", func(s *v1alpha1.AsyncActorSpec) {
			s.Workload.Template.Spec.InitContainers = []corev1.Container{{Name: "setup"}, {Name: "asya-runtime-init"}}
		}, rabbit, []string{"initContainers[1]: the name asya-runtime-init is reserved"}},
		{"reserved volume", func(s *v1alpha1.AsyncActorSpec) {
			s.Workload.Template.Spec.Volumes = []corev1.Volume{{Name: "socket-dir"}}
		}, rabbit, []string{"volumes[0]: the volume name socket-dir is reserved"}},
		{"the transport's volume name", func(s *v1alpha1.AsyncActorSpec) {
			s.Workload.Template.Spec.Volumes = []corev1.Volume{{Name: "asya-transport"}}
		}, rabbit, []string{"volumes[0]: the volume name asya-transport is reserved"}},
		{"a 0.3 actor on Pub/Sub", func(*v1alpha1.AsyncActorSpec) {}, config.Transport{Name: "gcp", Enabled: true, Kind: &pubsub.Settings{ProjectID: "p"}},
			[]string{`spec.transport: "gcp" serves only actors of the current shape (spec.actor): the Asya 0.3 sidecar has no Pub/Sub transport`}},
		{"service account with IRSA", func(s *v1alpha1.AsyncActorSpec) { s.Workload.Template.Spec.ServiceAccountName = "mine" }, irsa,
			[]string{"serviceAccountName: must be empty with transport \"aws\": pods run as the IRSA ServiceAccount asya-echo"}},
		{"service account without IRSA", func(s *v1alpha1.AsyncActorSpec) { s.Workload.Template.Spec.ServiceAccountName = "mine" }, rabbit, nil},
		{"min above max", func(s *v1alpha1.AsyncActorSpec) {
			s.Scaling.MinReplicas, s.Scaling.MaxReplicas = ptr.To[int32](5), ptr.To[int32](2)
		}, rabbit,
			[]string{"spec.scaling.minReplicas: 5 exceeds maxReplicas 2"}},
		{"bad kind", func(s *v1alpha1.AsyncActorSpec) { s.Workload.Kind = "Job" }, rabbit, []string{`spec.workload.kind: "Job"`}},
		{"formula without target", func(s *v1alpha1.AsyncActorSpec) { s.Scaling.Advanced = &v1alpha1.AdvancedScaling{Formula: "queue"} }, rabbit,
			[]string{"formula and target must be set together"}},
		{"utilization metric", func(s *v1alpha1.AsyncActorSpec) {
			s.Scaling.Advanced = &v1alpha1.AdvancedScaling{Formula: "queue", Target: "2", MetricType: "Utilization"}
		}, rabbit, []string{"not Utilization"}},
		{"negative replicas", func(s *v1alpha1.AsyncActorSpec) { s.Workload.Replicas = ptr.To[int32](-1) }, rabbit, []string{"spec.workload.replicas: -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := v1alpha1.AsyncActorSpec{Transport: tt.transport.Name,
				Workload: v1alpha1.WorkloadSpec{Template: v1alpha1.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{runtime}}}}}
			tt.edit(&spec)
			got := validate(&v1alpha1.AsyncActor{ObjectMeta: metav1.ObjectMeta{Name: "echo"}, Spec: spec.WithDefaults()}, tt.transport)
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestValidateResiliency(t *testing.T) {
	policies := func(p map[string]string) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for k, v := range p {
			out[k] = json.RawMessage(v)
		}
		return out
	}
	tests := []struct {
		name string
		r    v1alpha1.Resiliency
		want []string
	}{
		{"0.5 form", v1alpha1.Resiliency{Retry: &v1alpha1.Retry{InitialInterval: "500ms", MaxInterval: "1m", BackoffCoefficient: "1.5"},
			NonRetryableErrors: []string{"KeyError"}}, nil},
		{"1.x form", v1alpha1.Resiliency{Policies: policies(map[string]string{
			"default": `{"maxAttempts":3,"backoff":"linear","initialDelay":"1s","maxInterval":"30s","maxDuration":"10m","jitter":true,"onExhausted":["fix"]}`,
			"later":   `{"maxAttempts":2,"someday":"a field of a later release"}`}),
			Rules: []v1alpha1.ResiliencyRule{{Errors: []string{"ValueError"}, Policy: "later"}}}, nil},
		{"both forms", v1alpha1.Resiliency{Retry: &v1alpha1.Retry{}, Policies: policies(map[string]string{"default": `{}`})},
			[]string{"two forms of one setting"}},
		{"rule of no policy", v1alpha1.Resiliency{Rules: []v1alpha1.ResiliencyRule{{Errors: []string{"E"}, Policy: "gone"}}},
			[]string{`rules[0].policy: "gone" is not in`}},
		{"intervals the 0.5 sidecar refuses or replaces", v1alpha1.Resiliency{Retry: &v1alpha1.Retry{InitialInterval: "0s", MaxInterval: "soon"}},
			[]string{`retry.initialInterval: "0s"`, `retry.maxInterval: "soon"`}},
		{"coefficient under 1", v1alpha1.Resiliency{Retry: &v1alpha1.Retry{BackoffCoefficient: "0.5"}},
			[]string{"backoffCoefficient: 0.5 must be at least 1"}},
		{"policy that does not decode", v1alpha1.Resiliency{Policies: policies(map[string]string{"default": `{"maxAttempts":"3"}`})},
			[]string{"spec.resiliency.policies.default: json:"}},
		{"policy fields out of range", v1alpha1.Resiliency{Policies: policies(map[string]string{
			"default": `{"maxAttempts":0,"backoff":"fibonacci","initialDelay":"1 second","maxDuration":"-1s"}`})},
			[]string{"default.maxAttempts: 0 must be at least 1", `default.backoff: "fibonacci"`, `default.initialDelay: "1 second"`, `default.maxDuration: "-1s"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validateResiliency(&tt.r)
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestValidateNameReservesCatchingQueues(t *testing.T) {
	tests := []struct {
		name string
		want string
	}{
		{"echo", ""},
		{"echo.v2", ""},
		{"unroutable", ""},
		{"ml.unroutable", `metadata.name: "ml.unroutable": names ending in .unroutable are reserved: queue asya-ml.unroutable catches the unroutable messages of namespace ml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(validateName(tt.name), "; ")
			if got != tt.want {
				t.Errorf("problems %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateStateProxies(t *testing.T) {
	proxy := func(name, path, mode, image string) v1alpha1.StateProxy {
		return v1alpha1.StateProxy{Name: name, Mount: v1alpha1.StateProxyPath{Path: path}, WriteMode: mode,
			Connector: v1alpha1.StateProxyConnector{Image: image}}
	}
	for _, tt := range []struct {
		name    string
		proxies []v1alpha1.StateProxy
		want    []string
	}{
		{"two good ones", []v1alpha1.StateProxy{proxy("a", "/state/a", "", "c:1"), proxy("b", "/state/b", "passthrough", "c:1")}, nil},
		{"a name too long for its container", []v1alpha1.StateProxy{proxy(strings.Repeat("n", 47), "/s", "", "c")},
			[]string{"spec.stateProxy[0].name: \"nnn"}},
		{"the longest name", []v1alpha1.StateProxy{proxy(strings.Repeat("n", 46), "/s", "", "c")}, nil},
		{"not a DNS label", []v1alpha1.StateProxy{proxy("Cache", "/s", "", "c")}, []string{"spec.stateProxy[0].name"}},
		{"a name twice", []v1alpha1.StateProxy{proxy("a", "/x", "", "c"), proxy("a", "/y", "", "c")},
			[]string{"spec.stateProxy[1].name: \"a\" is also an earlier entry's"}},
		{"a path twice", []v1alpha1.StateProxy{proxy("a", "/x", "", "c"), proxy("b", "/x", "", "c")},
			[]string{"spec.stateProxy[1].mount.path: \"/x\" is also"}},
		{"a relative path", []v1alpha1.StateProxy{proxy("a", "state", "", "c")}, []string{"mount.path: \"state\" must be an absolute path"}},
		{"a path that breaks the mounts list", []v1alpha1.StateProxy{proxy("a", "/a;b", "", "c")}, []string{"without ':' or ';'"}},
		{"an unknown write mode", []v1alpha1.StateProxy{proxy("a", "/a", "async", "c")}, []string{"writeMode: \"async\""}},
		{"no image", []v1alpha1.StateProxy{proxy("a", "/a", "", "")}, []string{"spec.stateProxy[0].connector.image: required"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := validateStateProxies(tt.proxies)
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
