package dynamicapply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
)

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func list(t *testing.T, y string) []any {
	t.Helper()
	var l []any
	if err := yaml.Unmarshal([]byte(y), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMergeKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lists []string
		want  string
	}{
		{"env by name", []string{"[{name: A, value: x}, {name: B}]"}, "name"},
		{"ports by containerPort before name", []string{"[{containerPort: 80, name: http}]"}, "containerPort"},
		{"mounts by mountPath before name", []string{"[{name: v, mountPath: /a}]"}, "mountPath"},
		{"secretTargetRef by name", []string{"[{parameter: p, name: s, key: k}]"}, "name"},
		{"one item without the key makes it atomic", []string{"[{name: A}, {value: x}]"}, ""},
		{"scalars are atomic", []string{"[a, b]"}, ""},
		{"no conventional key", []string{"[{type: rabbitmq, metadata: {}}]"}, ""},
		{"empty", []string{"[]"}, ""},
		{"all lists must agree", []string{"[{name: A, port: 1}]", "[{name: B}]"}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lists [][]any
			for _, l := range tc.lists {
				lists = append(lists, list(t, l))
			}
			if got := MergeKey(lists...); got != tc.want {
				t.Errorf("MergeKey = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCollisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  string
		want []string
	}{
		{"unique", `spec: {containers: [{name: a, env: [{name: X}, {name: Y}]}]}`, nil},
		{
			"secretTargetRef entries naming one Secret",
			`spec: {secretTargetRef: [{parameter: awsAccessKeyID, name: aws, key: id}, {parameter: awsSecretAccessKey, name: aws, key: secret}]}`,
			[]string{`spec.secretTargetRef: entries {"key":"id","name":"aws","parameter":"awsAccessKeyID"} and {"key":"secret","name":"aws","parameter":"awsSecretAccessKey"} share name "aws", and Metacontroller's apply would merge them into one`},
		},
		{
			"one port for TCP and UDP, inside a named container",
			`spec: {containers: [{name: dns, ports: [{containerPort: 53, protocol: TCP}, {containerPort: 53, protocol: UDP}]}]}`,
			[]string{`spec.containers[name=dns].ports: entries {"containerPort":53,"protocol":"TCP"} and {"containerPort":53,"protocol":"UDP"} share containerPort 53, and Metacontroller's apply would merge them into one`},
		},
		{"atomic lists may repeat", `spec: {args: [a, a], triggers: [{type: cron}, {type: cron}]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Collisions(obj(t, tc.obj)) {
				got = append(got, c.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Collisions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		observed, lastApplied, desired string
		want                           string
	}{
		{
			name:        "fields of others are kept, fields no longer desired removed",
			observed:    `{spec: {replicas: 3, paused: true, keep: x}, status: {ready: 1}}`,
			lastApplied: `{spec: {paused: true}}`,
			desired:     `{spec: {minReadySeconds: 5}}`,
			want:        `{spec: {replicas: 3, keep: x, minReadySeconds: 5}, status: {ready: 1}}`,
		},
		{
			name:        "list maps merge by key: defaults kept, dropped items removed, others' items kept last",
			observed:    `{env: [{name: A, value: "1", extra: d}, {name: B, value: "2"}, {name: SIDE, value: s}]}`,
			lastApplied: `{env: [{name: A, value: "1"}, {name: B, value: "2"}]}`,
			desired:     `{env: [{name: C, value: "3"}, {name: A, value: "9"}]}`,
			want:        `{env: [{name: C, value: "3"}, {name: A, value: "9", extra: d}, {name: SIDE, value: s}]}`,
		},
		{
			name:        "atomic lists are replaced",
			observed:    `{args: [a, b], triggers: [{type: x, metadata: {q: "1"}}]}`,
			lastApplied: `{args: [a, b], triggers: [{type: x, metadata: {q: "1"}}]}`,
			desired:     `{args: [c], triggers: [{type: y}]}`,
			want:        `{args: [c], triggers: [{type: y}]}`,
		},
		{
			// What broke SQS scaling: two entries keyed by one Secret's
			// name come out as two copies of the last one.
			name:        "colliding entries collapse on update",
			observed:    `{secretTargetRef: [{parameter: id, name: aws, key: a}, {parameter: secret, name: aws, key: b}]}`,
			lastApplied: `{secretTargetRef: [{parameter: id, name: aws, key: a}, {parameter: secret, name: aws, key: b}]}`,
			desired:     `{secretTargetRef: [{parameter: id, name: aws, key: a}, {parameter: secret, name: aws, key: b}]}`,
			want:        `{secretTargetRef: [{parameter: secret, name: aws, key: b}, {parameter: secret, name: aws, key: b}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observed := obj(t, tc.observed)
			before := obj(t, tc.observed)
			got := Merge(observed, obj(t, tc.lastApplied), obj(t, tc.desired))
			if diff := cmp.Diff(obj(t, tc.want), got); diff != "" {
				t.Errorf("Merge (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, observed); diff != "" {
				t.Errorf("Merge changed its observed argument:\n%s", diff)
			}
		})
	}
}

func TestChanges(t *testing.T) {
	applied := `{spec: {env: [{name: A, value: "1"}]}}`
	if Changes(obj(t, applied), obj(t, applied), obj(t, applied)) {
		t.Error("re-applying what is there changes it")
	}
	dup := `{spec: {env: [{name: A, value: "1"}, {name: A, value: "2"}]}}`
	if !Changes(obj(t, dup), obj(t, dup), obj(t, dup)) {
		t.Error("re-applying a list with colliding entries does not change it")
	}
}
