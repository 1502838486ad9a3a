package sync

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/asya-sh/asya-sync/api/hook"
	"github.com/asya-sh/asya-sync/config"
)

// TestFlatMessagesNameFlatFields: what the checks shared with the nested
// shape find in a flat actor (they run on the pod template, ScaledObject
// and replicas the flat fields are written into) is named in its status
// by the flat fields its user wrote, or said to be asya-sync's own; never
// by spec.workload, which a flat spec does not have.
func TestFlatMessagesNameFlatFields(t *testing.T) {
	const base = "{actor: echo, image: python:3.12, handler: echo.handle, "
	for _, tc := range []struct {
		name string
		spec string // the flat spec, YAML
		// restricted: the actor's Namespace enforces Pod Security
		// "restricted"; else no Namespace is sent and none is checked.
		restricted bool
		edit       func(*hook.SyncRequest, *Handler)
		condition  string
		want       string // in the condition's message, ending with what follows the path
	}{
		{"env of one name twice", base + "env: [{name: A, value: '1'}, {name: A, value: '2'}]}", false, nil,
			"WorkloadReady", `spec.env[name=A]: entries {"name":"A","value":"1"} and {"name":"A","value":"2"} share name "A"`},
		{"env naming asya-sync's ASYA_HANDLER", base + "env: [{name: ASYA_HANDLER, value: other.handle}]}", false, nil,
			"WorkloadReady", `the ASYA_HANDLER asya-sync sets from spec.handler and spec.env[name=ASYA_HANDLER]: entries {"name":"ASYA_HANDLER","value":"echo.handle"}`},
		{"env of a system actor naming ASYA_ENABLE_VALIDATION",
			"{actor: x-sink, image: python:3.12, handler: sink.handle, env: [{name: ASYA_ENABLE_VALIDATION, value: 'true'}]}", false, nil,
			"WorkloadReady", `the ASYA_ENABLE_VALIDATION=false asya-sync sets for an actor that ends routes and spec.env[name=ASYA_ENABLE_VALIDATION]: entries`},
		{"env and secretRefs of one variable",
			base + "env: [{name: KEY, value: x}], secretRefs: [{secretName: keys, keys: [{key: api, envVar: KEY}]}]}", false, nil,
			"WorkloadReady", `spec.env[name=KEY] and spec.secretRefs[secretName=keys].keys[envVar=KEY]: entries`},
		{"volumes of one name", base + "volumes: [{name: data, emptyDir: {}}, {name: data, emptyDir: {}}]}", false, nil,
			"WorkloadReady", `spec.volumes[name=data]: entries`},
		{"volumeMounts at one path",
			base + "volumes: [{name: a, emptyDir: {}}, {name: b, emptyDir: {}}], volumeMounts: [{name: a, mountPath: /data}, {name: b, mountPath: /data}]}", false, nil,
			"WorkloadReady", `spec.volumeMounts[mountPath=/data]: entries`},
		{"resources claims of one name", base + "resources: {claims: [{name: gpu}, {name: gpu}]}}", false, nil,
			"WorkloadReady", `spec.resources.claims[name=gpu]: entries`},
		{"sidecar resources claims of one name", base + "sidecar: {resources: {claims: [{name: gpu}, {name: gpu}]}}}", false, nil,
			"WorkloadReady", `spec.sidecar.resources.claims[name=gpu]: entries`},
		{"sidecars of one name", base + "sidecars: [{name: shipper, image: a}, {name: shipper, image: b}]}", false, nil,
			"WorkloadReady", `spec.sidecars[name=shipper]: entries`},
		{"a sidecar's env of one name", base + "sidecars: [{name: shipper, image: a, env: [{name: X}, {name: X, value: 'y'}]}]}", false, nil,
			"WorkloadReady", `spec.sidecars[name=shipper].env[name=X]: entries`},
		{"initContainers of one name", base + "initContainers: [{name: fetch, image: a}, {name: fetch, image: b}]}", false, nil,
			"WorkloadReady", `spec.initContainers[name=fetch]: entries`},
		{"an init container's ports", base + "initContainers: [{name: fetch, image: a, ports: [{containerPort: 53}, {containerPort: 53, protocol: UDP}]}]}", false, nil,
			"WorkloadReady", `spec.initContainers[name=fetch].ports[containerPort=53]: entries`},
		{"Pod Security: the user's init container, sidecar and volume",
			base + "sidecars: [{name: shipper, image: a}], initContainers: [{name: fetch, image: a, securityContext: {privileged: true}}], volumes: [{name: host, hostPath: {path: /}}]}",
			true, nil, "WorkloadReady",
			`spec.initContainers[name=fetch], spec.sidecars[name=shipper], spec.volumes[name=host]: namespace "default" would refuse the pods: violates PodSecurity "restricted:latest": privileged (container "fetch" must not`},
		{"Pod Security: the actor's sidecar securityContext", base + "sidecar: {securityContext: {runAsUser: 0}}}", true, nil,
			"WorkloadReady", `spec.sidecar.securityContext: namespace "default" would refuse the pods`},
		{"Pod Security: the service's sidecarSecurityContext", base[:len(base)-2] + "}", true,
			func(_ *hook.SyncRequest, h *Handler) { h.Config.SidecarSecurityContext = &corev1.SecurityContext{} },
			"WorkloadReady", `the sidecar asya-sidecar, which asya-sync adds with the service configuration's sidecarSecurityContext: namespace "default" would refuse the pods`},
		{"a trigger's authenticationRef", base + "scaling: {additionalTriggers: [{type: cpu, name: busy, metadata: {value: '50'}, authenticationRef: {name: a, kind: ClusterTriggerAuthentication}}]}}", false, nil,
			"WorkloadReady", `spec.scaling.additionalTriggers[0].authenticationRef.kind: "ClusterTriggerAuthentication"`},
		{"a trigger KEDA refuses", base + "scaling: {additionalTriggers: [{type: cpu, name: queue, metadata: {value: '50'}}]}}", false, nil,
			"WorkloadReady", `spec.scaling.additionalTriggers: KEDA would refuse the ScaledObject: triggerName "queue" is defined multiple times`},
		{"KEDA not installed", base + "replicas: 2}", false,
			func(req *hook.SyncRequest, _ *Handler) { req.Children.ScaledObjects = nil },
			"ScalingReady", `so Deployment hardened runs with spec.replicas (2)`},
		{"no transport for flat actors", base[:len(base)-2] + "}", false,
			func(_ *hook.SyncRequest, h *Handler) {
				cfg, err := config.Parse([]byte("transports: {mq: {type: rabbitmq, enabled: false, config: {host: mq, username: asya}}}"))
				if err != nil {
					t.Fatal(err)
				}
				h.Config = cfg
			},
			"TransportReady", `the service configuration's flatActors.transport (the actor names no spec.transport): none is chosen (enabled transports: []): set flatActors.transport`},
		{"two transports, none chosen for flat actors", base[:len(base)-2] + "}", false,
			func(_ *hook.SyncRequest, h *Handler) {
				cfg, err := config.Parse([]byte("transports: {mq: {type: rabbitmq, config: {host: mq, username: asya}}, q: {type: sqs, config: {region: r, accountId: '1'}}}"))
				if err != nil {
					t.Fatal(err)
				}
				h.Config = cfg
			},
			"TransportReady", `the service configuration's flatActors.transport (the actor names no spec.transport): none is chosen (enabled transports: [mq q]): set flatActors.transport in the service configuration (the chart's config.flatActors.transport), or spec.transport on the actor`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, h := loadCase(t, filepath.Join(casesDir, "flat-restricted"))
			withSpec(t, req, tc.spec)
			if !tc.restricted {
				req.Related.Namespaces = nil
			}
			if tc.edit != nil {
				tc.edit(req, h)
			}
			resp, err := h.Answer(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			msg := conditionIn(resp, tc.condition).Message
			if !strings.Contains(msg, tc.want) {
				t.Errorf("%s: %s\nwant it to say: %s", tc.condition, msg, tc.want)
			}
			for _, c := range resp.Status.Conditions {
				if strings.Contains(c.Message, "spec.workload") {
					t.Errorf("%s names a field a flat spec does not have: %s", c.Type, c.Message)
				}
			}
		})
	}
}

// withSpec replaces the request parent's spec with spec, written in YAML.
func withSpec(t *testing.T, req *hook.SyncRequest, spec string) {
	t.Helper()
	var parent, s map[string]any
	if err := json.Unmarshal(req.Parent, &parent); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatal(err)
	}
	parent["spec"] = s
	raw, err := json.Marshal(parent)
	if err != nil {
		t.Fatal(err)
	}
	req.Parent = raw
	if req.Actor, req.SpecError, err = hook.DecodeParent(raw, nil); err != nil {
		t.Fatal(err)
	}
	if req.SpecError != nil {
		t.Fatalf("spec: %v", req.SpecError)
	}
}
