package children

import (
	"bytes"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/api/v1alpha1"
	"github.com/asya-sh/asya-sync/internal/golden"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/pubsub"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
	"github.com/asya-sh/asya-sync/transport/sqs"
)

// scalingInput is an actor "echo" in namespace "ml" with scaling on, on the
// given transport, changed by edit before its spec is defaulted.
func scalingInput(t transport.Kind, edit func(*v1alpha1.AsyncActorSpec)) Input {
	actor := &v1alpha1.AsyncActor{}
	actor.Name, actor.Namespace = "echo", "ml"
	actor.Spec.Transport = t.Type()
	actor.Spec.Scaling.Enabled = ptr.To(true)
	if edit != nil {
		edit(&actor.Spec)
	}
	actor.Spec = actor.Spec.WithDefaults()
	return Input{Actor: actor, Transport: t, Decided: Decided{ScalingActive: actor.Spec.Scaling.On()}}
}

func rabbitMQTransport(edit func(*rabbitmq.Settings)) transport.Kind {
	r := &rabbitmq.Settings{
		Host:              "rabbitmq.default.svc.cluster.local",
		Port:              5672,
		VHost:             "/",
		Username:          "asya",
		PasswordSecretRef: &transport.SecretKeyRef{Name: "rabbitmq-secret", Key: "password"},
	}
	if edit != nil {
		edit(r)
	}
	return r
}

func sqsTransport(edit func(*sqs.Settings)) transport.Kind {
	s := &sqs.Settings{Region: "eu-west-1", AccountID: "123456789012", WaitTimeSeconds: ptr.To[int32](sqs.DefaultWaitTimeSeconds)}
	if edit != nil {
		edit(s)
	}
	return s
}

func staticCredentials(s *sqs.Settings) {
	s.Credentials = &sqs.Credentials{
		AccessKeyIDSecretRef:     &transport.SecretKeyRef{Name: "aws-creds", Key: "access-key-id"},
		SecretAccessKeySecretRef: &transport.SecretKeyRef{Name: "aws-creds", Key: "secret-access-key"},
	}
}

const actorRole = "arn:aws:iam::123456789012:role/asya-actors"

func pubsubTransport(edit func(*pubsub.Settings)) transport.Kind {
	s := &pubsub.Settings{ProjectID: "acme-prod"}
	if edit != nil {
		edit(s)
	}
	if err := s.Check(); err != nil {
		panic(err)
	}
	return s
}

func pubsubKey(s *pubsub.Settings) {
	s.Credentials = &pubsub.Credentials{SecretRef: &transport.SecretKeyRef{Name: "gcp-pubsub", Key: "credentials.json"}}
}

// scalingCases are the golden cases under testdata/scaling/<name>.yaml.
var scalingCases = []struct {
	name string
	in   Input
}{
	{"rabbitmq-password-secret", scalingInput(rabbitMQTransport(nil), nil)},
	{"rabbitmq-guest", scalingInput(rabbitMQTransport(func(r *rabbitmq.Settings) {
		r.Username, r.PasswordSecretRef = rabbitmq.DefaultUsername, nil
	}), nil)},
	{"rabbitmq-user-without-secret", scalingInput(rabbitMQTransport(func(r *rabbitmq.Settings) {
		r.PasswordSecretRef = nil
	}), nil)},
	{"rabbitmq-vhost", scalingInput(rabbitMQTransport(func(r *rabbitmq.Settings) { r.VHost = "asya" }), nil)},
	{"rabbitmq-ipv6-host", scalingInput(rabbitMQTransport(func(r *rabbitmq.Settings) {
		r.Host, r.Port, r.PasswordSecretRef = "fd00::10", 5673, nil
	}), nil)},
	{"sqs-static-credentials", scalingInput(sqsTransport(staticCredentials), nil)},
	{"sqs-irsa", scalingInput(sqsTransport(func(s *sqs.Settings) { s.ActorRoleArn = actorRole }), nil)},
	{"sqs-emulator", scalingInput(sqsTransport(func(s *sqs.Settings) {
		s.Endpoint = "http://localstack.default.svc:4566/"
	}), nil)},
	{"sqs-emulator-static-credentials", scalingInput(sqsTransport(func(s *sqs.Settings) {
		s.Endpoint = "http://localstack.default.svc:4566"
		staticCredentials(s)
	}), nil)},
	{"pubsub-key", scalingInput(pubsubTransport(pubsubKey), nil)},
	{"pubsub-workload-identity", scalingInput(pubsubTransport(nil), nil)},
	{"advanced-modifiers", scalingInput(rabbitMQTransport(nil), func(s *v1alpha1.AsyncActorSpec) {
		s.Scaling.Advanced = &v1alpha1.AdvancedScaling{
			Formula:          "queue / 2",
			Target:           "10",
			ActivationTarget: "1",
			MetricType:       "Value",
		}
	})},
	{"advanced-restore-only", scalingInput(rabbitMQTransport(nil), func(s *v1alpha1.AsyncActorSpec) {
		s.Scaling.Advanced = &v1alpha1.AdvancedScaling{RestoreToOriginalReplicaCount: true}
	})},
	{"statefulset-custom-bounds", scalingInput(sqsTransport(staticCredentials), func(s *v1alpha1.AsyncActorSpec) {
		s.Workload.Kind = v1alpha1.KindStatefulSet
		s.Scaling.MinReplicas = ptr.To[int32](1)
		s.Scaling.MaxReplicas = ptr.To[int32](7)
		s.Scaling.PollingInterval = 5
		s.Scaling.CooldownPeriod = ptr.To[int32](120)
		s.Scaling.QueueLength = 3
	})},
}

// TestScalingGolden renders the scaling children of each case the way the
// sync hook sends them and compares them with testdata/scaling/<case>.yaml.
func TestScalingGolden(t *testing.T) {
	for _, tc := range scalingCases {
		t.Run(tc.name, func(t *testing.T) {
			golden.Bytes(t, filepath.Join("testdata", "scaling", tc.name+".yaml"), renderYAML(t, scalingChildren(tc.in)...))
		})
	}
}

// allowedEmpty are the empty fields typed rendering cannot leave out.
// KEDA's AdvancedConfig holds ScalingModifiers by value, so it always
// renders; the CRD accepts an empty object there and KEDA treats it as no
// modifiers.
var allowedEmpty = map[string]bool{".spec.advanced.scalingModifiers": true}

// TestScalingRenderedHasNoEmptyFields guards against fields a typed object
// renders although nothing was set (empty objects, nulls): the KEDA CRDs
// would at best store them and at worst reject them.
func TestScalingRenderedHasNoEmptyFields(t *testing.T) {
	for _, tc := range scalingCases {
		for _, obj := range scalingChildren(tc.in) {
			m := rendered(t, obj)
			for _, path := range emptyFields(m, "") {
				if !allowedEmpty[path] {
					t.Errorf("%s: %s renders an empty %s", tc.name, m["kind"], path)
				}
			}
		}
	}
}

func TestScaledObjectNilWithoutScaling(t *testing.T) {
	off := scalingInput(rabbitMQTransport(nil), func(s *v1alpha1.AsyncActorSpec) { s.Scaling.Enabled = ptr.To(false) })
	noKEDA := scalingInput(rabbitMQTransport(nil), nil)
	noKEDA.Decided.ScalingActive = false
	for name, in := range map[string]Input{"scaling off": off, "no KEDA": noKEDA} {
		if so := ScaledObject(in); so != nil {
			t.Errorf("%s: ScaledObject = %+v, want nil", name, so)
		}
	}
}

// scalingChildren are the non-nil scaling children, in Build's order.
func scalingChildren(in Input) []runtime.Object {
	var objs []runtime.Object
	if sa := ServiceAccount(in); sa != nil {
		objs = append(objs, sa)
	}
	if ta := TriggerAuthentication(in); ta != nil {
		objs = append(objs, ta)
	}
	if so := ScaledObject(in); so != nil {
		objs = append(objs, so)
	}
	return objs
}

// rendered is obj as the sync hook sends it: unstructured, without status
// and server-set metadata.
func rendered(t *testing.T, obj runtime.Object) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return m
}

func renderYAML(t *testing.T, objs ...runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i, obj := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		out, err := yaml.Marshal(rendered(t, obj))
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(out)
	}
	return buf.Bytes()
}

// emptyFields lists the paths below prefix whose values are nil, empty maps
// or empty lists.
func emptyFields(v any, prefix string) []string {
	var paths []string
	switch v := v.(type) {
	case nil:
		return []string{prefix}
	case map[string]any:
		if len(v) == 0 {
			return []string{prefix}
		}
		for k, child := range v {
			paths = append(paths, emptyFields(child, prefix+"."+k)...)
		}
	case []any:
		if len(v) == 0 {
			return []string{prefix}
		}
		for _, child := range v {
			paths = append(paths, emptyFields(child, prefix+"[]")...)
		}
	}
	return paths
}
