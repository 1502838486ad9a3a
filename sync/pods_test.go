package sync

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/asya-sh/asya-sync/config"
)

// listedPods is the API server as readPods sees it: the pods it answers,
// or an error, and the lists it was asked for.
type listedPods struct {
	pods  []corev1.Pod
	err   error
	asked []string
}

func (l *listedPods) ListPods(_ context.Context, namespace, actor string) ([]corev1.Pod, error) {
	l.asked = append(l.asked, namespace+"/"+actor)
	return l.pods, l.err
}

// crashingRuntime is a pod whose runtime container crash-loops.
func crashingRuntime() corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-1", Namespace: "ml", Labels: map[string]string{"asya.sh/asya": "echo"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "asya-runtime", RestartCount: 4,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		}}},
	}
}

// TestPodsReadWhileUnhealthy: with watch.pods whileUnhealthy the service
// lists an actor's pods itself only while its workload is not settled,
// and reports what they show; a settled workload, pods
// Metacontroller sent and a finalize list nothing.
func TestPodsReadWhileUnhealthy(t *testing.T) {
	settled := deployment(1, 1)
	crashing := deployment(1, 0)
	for _, tc := range []struct {
		name       string
		workload   map[string]any
		sent       map[string]any // the Pod.v1 group Metacontroller sent, if any
		finalizing bool
		lister     *listedPods
		wantAsked  int
		wantStatus string
		wantNote   string // in WorkloadReady's message
	}{
		{name: "settled workload: no list", workload: settled, lister: &listedPods{}, wantStatus: "Running"},
		{name: "not settled: listed, RuntimeError", workload: crashing, lister: &listedPods{pods: []corev1.Pod{crashingRuntime()}},
			wantAsked: 1, wantStatus: "RuntimeError"},
		{name: "not settled, list fails: the counts, and why", workload: crashing, lister: &listedPods{err: errors.New("pods is forbidden")},
			wantAsked: 1, wantNote: "pod health not read: pods is forbidden"},
		{name: "not settled, no API client", workload: crashing, wantNote: "pod health not read: asya-sync has no Kubernetes API client"},
		{name: "pods sent by Metacontroller: used, no list", workload: crashing, sent: map[string]any{}, lister: &listedPods{}},
		{name: "finalize: no list", workload: crashing, finalizing: true, lister: &listedPods{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("transports: {mq: {type: rabbitmq, config: {host: mq}}}"))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			h := &Handler{Config: cfg, Script: testScript, FlatScript: testFlatScript, Actors: noOtherActors{}, Secrets: secretsExist{}, Now: func() time.Time { return now }}
			if tc.lister != nil {
				h.Pods = tc.lister
			}
			resp, err := h.Answer(context.Background(), DecodeBody(t, echoBody(tc.finalizing, tc.workload, "Pod.v1", tc.sent)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.lister != nil && len(tc.lister.asked) != tc.wantAsked {
				t.Errorf("pods listed %d times (%v), want %d", len(tc.lister.asked), tc.lister.asked, tc.wantAsked)
			}
			if tc.wantAsked > 0 && tc.lister.asked[0] != "ml/echo" {
				t.Errorf("listed %v, want the pods of ml/echo", tc.lister.asked)
			}
			if tc.wantStatus != "" && resp.Status.Status != tc.wantStatus {
				t.Errorf("status %q, want %q", resp.Status.Status, tc.wantStatus)
			}
			msg := conditionIn(resp, "WorkloadReady").Message
			if (tc.wantNote != "") != strings.Contains(msg, "pod health not read") || !strings.Contains(msg, tc.wantNote) {
				t.Errorf("WorkloadReady message %q, want the note %q", msg, tc.wantNote)
			}
		})
	}
}

// echoBody is the request for ml/echo (actorObject) observing workload,
// with the related group sent when it is not nil.
func echoBody(finalizing bool, workload map[string]any, group string, sent map[string]any) map[string]any {
	body := map[string]any{
		"parent":   actorObject(finalizing),
		"children": map[string]any{"Deployment.apps/v1": map[string]any{"ml/echo": workload}},
		"related":  map[string]any{},
	}
	if sent != nil {
		body["related"] = map[string]any{group: sent}
	}
	if finalizing {
		body["finalizing"] = true
	}
	return body
}

// actorObject is a 0.3 actor ml/echo on the transport mq.
func actorObject(deleting bool) map[string]any {
	meta := map[string]any{"name": "echo", "namespace": "ml", "uid": "u-echo", "generation": 1,
		"creationTimestamp": "2026-11-28T11:00:00Z"}
	if deleting {
		meta["deletionTimestamp"] = "2026-11-28T11:59:00Z"
	}
	return map[string]any{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor", "metadata": meta,
		"spec": map[string]any{"transport": "mq", "workload": map[string]any{"replicas": 1, "template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "asya-runtime", "image": "python:3.13"}}}}}}}
}

// deployment is the observed Deployment ml/echo wanting want replicas, of
// which ready are ready and available.
func deployment(want, ready int) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "echo", "namespace": "ml", "generation": 1},
		"spec":     map[string]any{"replicas": want},
		"status": map[string]any{"observedGeneration": 1, "replicas": want, "updatedReplicas": want,
			"readyReplicas": ready, "availableReplicas": ready}}
}
