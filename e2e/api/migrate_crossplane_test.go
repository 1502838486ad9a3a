//go:build e2e

package api

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/config"
	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestMigrateFromCrossplane runs docs/migrate.md's steps 2, 3 and 7 ("From
// upstream's Crossplane installation") as printed, on what upstream leaves:
//
//   - the claims as Crossplane's API server lists them (claims.json), with
//     Crossplane's fields and the XRD's defaults: two RabbitMQ claims that
//     upstream's RabbitMQ composition ran under another name than their
//     spec.actor (the claim's name; the label asya.sh/actor) and an SQS
//     claim;
//   - provider-aws Queues, on a stand-in of their CRD: the SQS actor's,
//     tagged by the composition, the crew chart's DLQ, an unrelated one;
//   - on the real brokers, the queues the compositions consumed, holding
//     messages: asya-NS-<name it ran as> bound to the shared exchange on
//     RabbitMQ, and on SQS the actor's queue redriving to asya-NS-dlq.
//
// Step 2 renames the RabbitMQ actors and says so, and lists the claim that
// names a sidecar of its own; step 3 orphans the actor's Queue only; after
// step 7 each actor runs asya-sync's workload on the queue upstream
// consumed, its messages still there and the SQS queue's redrive policy
// unchanged, with the service's flat sidecar where the claim holds the
// XRD's default (0.5's :latest, 1.x's untagged repository) and the named
// one elsewhere.
func TestMigrateFromCrossplane(t *testing.T) {
	if !env.Rabbit || !env.SQS {
		testenv.Missing(t, "RabbitMQ and the SQS emulator", fmt.Errorf("rabbit %v, sqs %v", env.Rabbit, env.SQS))
	}
	if _, err := exec.LookPath("jq"); err != nil {
		testenv.Missing(t, "jq, which docs/migrate.md's blocks use", err)
	}
	ctx := testenv.CtxFor(t, 3*time.Minute)
	ns := "e2e-from-crossplane"
	testenv.EnsureNamespace(t, ctx, ns, true)
	const messages = 3
	sqsActor := "summarize-" + env.RunID
	const ownSidecar = "ghcr.io/deliveryhero/asya-sidecar:0.5.3"

	// The RabbitMQ queues upstream consumed: the claim "ingest" (spec.actor
	// ingester) ran as its name, the claim "enrich" as its label.
	rabbit := testenv.Rabbit(t)
	ranAs := map[string]string{"ingest": "ingest", "enrich": "enricher"}
	for _, name := range []string{"ingest", "enrich"} {
		queue := "asya-" + ns + "-" + ranAs[name]
		testenv.WithChannel(t, func(ch *amqp.Channel) error {
			if err := ch.ExchangeDeclare("asya", "topic", true, false, false, false, nil); err != nil {
				return err
			}
			if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
				return err
			}
			return ch.QueueBind(queue, ranAs[name], "asya", false, nil)
		})
		t.Cleanup(func() { testenv.DeleteQueue(t, rabbit, queue) })
		for i := 0; i < messages; i++ {
			testenv.Publish(t, rabbit, queue)
		}
	}

	// The SQS queue, as upstream's SQS composition makes it: redriving to
	// the namespace's DLQ, which the crew chart makes and nobody deletes.
	dlq, err := testenv.SQSClient().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("asya-" + ns + "-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	dlqAttrs, err := testenv.SQSClient().GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	dlqARN := dlqAttrs.Attributes[string(types.QueueAttributeNameQueueArn)]
	sqsQueue := "asya-" + ns + "-" + sqsActor
	created, err := testenv.SQSClient().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(sqsQueue),
		Attributes: map[string]string{"VisibilityTimeout": "30", "MessageRetentionPeriod": "345600", "ReceiveMessageWaitTimeSeconds": "20",
			"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":3}`}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < messages; i++ {
		if _, err := testenv.SQSClient().SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String(`{"n":` + strconv.Itoa(i) + `}`)}); err != nil {
			t.Fatal(err)
		}
	}

	// Step 2: save the actors.
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, "claims.json"), testenv.Obj{"apiVersion": "v1", "kind": "List", "items": []any{
		upstreamClaim(ns, "ingest", nil, testenv.Obj{"actor": "ingester", "handler": "ingest.run"}, "rabbitmq"),
		upstreamClaim(ns, "enrich", testenv.Obj{"asya.sh/actor": "enricher"}, testenv.Obj{"actor": "enrich", "handler": "enrich.run",
			"sidecar": testenv.Obj{"image": testenv.Obj{"repository": "ghcr.io/deliveryhero/asya-sidecar"}}}, "rabbitmq"), // 1.x's XRD default
		upstreamClaim(ns, "summarize", nil, testenv.Obj{"actor": sqsActor, "transport": "sqs", "handler": "summarize.run",
			"sidecar": testenv.Obj{"image": ownSidecar}}, "sqs"),
	}})
	out := runDocBlockIn(t, dir, "docs/migrate.md", "save-actors", ns)
	for _, want := range []string{ns + "/ingest: spec.actor ingester -> ingest", ns + "/enrich: spec.actor enrich -> enricher"} {
		if !strings.Contains(out, want) {
			t.Errorf("step 2 does not say %q; it printed:\n%s", want, out)
		}
	}
	if strings.Contains(out, "summarize") {
		t.Errorf("step 2 renames the SQS actor:\n%s", out)
	}
	if out := runDocBlockIn(t, dir, "docs/migrate.md", "list-own-sidecars", ns); out != ns+"/summarize: "+ownSidecar+"\n" {
		t.Errorf("step 2 lists as naming a sidecar of their own:\n%s\nwant only %s/summarize", out, ns)
	}

	// Step 3: orphan the actors' SQS queues, and only those.
	testenv.Kubectl(t, "apply", "-f", filepath.Join(env.Root, "e2e", "testdata", "crossplane-sqs-queue-crd.yaml"))
	testenv.Kubectl(t, "wait", "--for=condition=Established", "crd/queues.sqs.aws.upbound.io", "--timeout=30s")
	queues := map[string]testenv.Obj{ // name → spec.forProvider.tags
		sqsQueue:              {"asya.sh/namespace": ns, "asya.sh/actor": sqsActor},
		"asya-" + ns + "-dlq": {"asya.sh/namespace": ns, "asya.sh/role": "dlq"},
		"orders-" + env.RunID: {"team": "orders"},
	}
	var mrs []any
	for name, tags := range queues {
		mrs = append(mrs, testenv.Obj{"apiVersion": "sqs.aws.upbound.io/v1beta1", "kind": "Queue", "metadata": testenv.Obj{"name": name},
			"spec": testenv.Obj{"forProvider": testenv.Obj{"name": name, "region": "us-east-1", "tags": tags}, "deletionPolicy": "Delete",
				"providerConfigRef": testenv.Obj{"name": "default"}}})
		t.Cleanup(func() {
			exec.Command(filepath.Join(env.Bin, "kubectl"), "--kubeconfig", env.Cluster.Kubeconfig, "delete",
				"queues.sqs.aws.upbound.io", name, "--ignore-not-found").Run()
		})
	}
	mrFile := filepath.Join(dir, "queues.json")
	writeJSON(t, mrFile, testenv.Obj{"apiVersion": "v1", "kind": "List", "items": mrs})
	testenv.Kubectl(t, "apply", "-f", mrFile)
	runDocBlockIn(t, dir, "docs/migrate.md", "orphan-sqs-queues", ns)
	for name := range queues {
		want := "Delete"
		if name == sqsQueue {
			want = "Orphan"
		}
		if got := testenv.Kubectl(t, "get", "queues.sqs.aws.upbound.io", name, "-o", "jsonpath={.spec.deletionPolicy}"); got != want {
			t.Errorf("Queue %s: deletionPolicy %s after step 3, want %s", name, got, want)
		}
	}

	// Step 7: re-apply the saved actors.
	runDocBlockIn(t, dir, "docs/migrate.md", "reapply-actors", ns)
	for _, name := range []string{"ingest", "enrich", "summarize"} {
		converge(t, ctx, ns, name)
		a := testenv.GetActor(t, ctx, ns, name)
		d, ok := childrenOf(t, ctx, ns, name)["Deployment/"+name]
		if !ok {
			t.Errorf("%s: no Deployment; status %s", name, testenv.MustJSON(a["status"]))
			continue
		}
		img := testenv.Str(containerOf(d, "asya-sidecar"), "image")
		switch {
		case name == "summarize" && img != ownSidecar:
			t.Errorf("%s: sidecar %q, want the one it names, %s", name, img, ownSidecar)
		case name != "summarize" && img != config.DefaultFlatSidecarImage:
			t.Errorf("%s: sidecar %q, want the service's flat sidecar %s for the XRD's default", name, img, config.DefaultFlatSidecarImage)
		}
		r, ok := ranAs[name]
		if !ok {
			continue // the SQS actor's queueIdentifier is its ARN, checked below
		}
		if got, want := testenv.Str(a, "status", "queueIdentifier"), "asya-"+ns+"-"+r; got != want {
			t.Errorf("%s: status.queueIdentifier %q, want %q, the queue upstream consumed", name, got, want)
		}
	}
	for _, name := range []string{"ingest", "enrich"} {
		testenv.WantMessages(t, rabbit, "asya-"+ns+"-"+ranAs[name], messages, "after re-applying the actors")
	}
	attrs, err := testenv.SQSClient().GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: created.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameQueueArn,
			types.QueueAttributeNameRedrivePolicy}})
	if err != nil {
		t.Fatal(err)
	}
	// As upstream's status: the SQS queue by its ARN, the one the emulator
	// reports, and its URL.
	st := testenv.GetActor(t, ctx, ns, "summarize")["status"].(testenv.Obj)
	if got, want := testenv.Str(st, "queueIdentifier"), attrs.Attributes[string(types.QueueAttributeNameQueueArn)]; got != want {
		t.Errorf("status.queueIdentifier %q, want the queue's ARN %q", got, want)
	}
	if got := testenv.Str(st, "queueUrl"); got != aws.ToString(created.QueueUrl) {
		t.Errorf("status.queueUrl %q, want %q", got, aws.ToString(created.QueueUrl))
	}
	if n := attrs.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)]; n != strconv.Itoa(messages) {
		t.Errorf("%s holds %s messages after re-applying the actor, want %d", sqsQueue, n, messages)
	}
	if p := attrs.Attributes[string(types.QueueAttributeNameRedrivePolicy)]; !strings.Contains(p, dlqARN) {
		t.Errorf("%s: RedrivePolicy %q after asya-sync adopted it, want upstream's to %s", sqsQueue, p, dlqARN)
	}
	for _, name := range []string{"summarize", "ingest", "enrich"} {
		deleteAndFinalize(t, ctx, ns, name)
	}
}

// upstreamClaim is a claim as Crossplane's API server lists it: spec with
// the XRD's defaults and the fields Crossplane sets, metadata and status
// of its own.
func upstreamClaim(ns, name string, labels, spec testenv.Obj, transport string) testenv.Obj {
	claim := testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "AsyncActor",
		"metadata": testenv.Obj{"name": name, "namespace": ns, "uid": "00000000-0000-4000-8000-" + fmt.Sprintf("%x", name[:6]),
			"resourceVersion": "4711", "generation": 1, "creationTimestamp": "2026-11-01T10:00:00Z",
			"finalizers": []any{"finalizer.apiextensions.crossplane.io"}},
		"spec": testenv.Obj{"image": "python:3.12-slim", "imagePullPolicy": "IfNotPresent", "pythonExecutable": "python3", "replicas": 1,
			"scaling":        testenv.Obj{"enabled": false, "minReplicaCount": 0, "maxReplicaCount": 10, "pollingInterval": 30, "cooldownPeriod": 300, "queueLength": 5},
			"sidecar":        testenv.Obj{"image": "ghcr.io/deliveryhero/asya-sidecar:latest"},
			"compositionRef": testenv.Obj{"name": "asyncactor-" + transport}, "compositionRevisionRef": testenv.Obj{"name": "asyncactor-" + transport + "-9d3c2b1"},
			"compositionSelector":     testenv.Obj{"matchLabels": testenv.Obj{"asya.sh/transport": transport}},
			"compositionUpdatePolicy": "Automatic", "compositeDeletePolicy": "Background",
			"resourceRef": testenv.Obj{"apiVersion": "asya.sh/v1alpha1", "kind": "XAsyncActor", "name": name + "-h2x8q"}},
		"status": testenv.Obj{"phase": "Ready", "queueIdentifier": "asya-" + ns + "-" + name,
			"conditions": []any{testenv.Obj{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "2026-11-01T10:01:00Z"}}},
	}
	if labels != nil {
		testenv.MapAt(claim, "metadata")["labels"] = labels
	}
	for k, v := range spec {
		testenv.MapAt(claim, "spec")[k] = v
	}
	return claim
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
