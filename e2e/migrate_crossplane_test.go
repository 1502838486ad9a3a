//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
)

// TestMigrateFromCrossplane: the state upstream's Crossplane installation
// leaves after step 4 of docs/migrate.md ("From upstream's Crossplane
// installation"): the claims and their workloads gone, a RabbitMQ queue
// asya-NS-A bound to the shared exchange and an orphaned SQS queue
// asya-NS-B, both holding messages. Re-applying the saved flat actors
// (step 7) adopts both queues with their messages and runs asya-sync's
// workloads.
func TestMigrateFromCrossplane(t *testing.T) {
	if !env.rabbit || !env.sqs {
		testenv.Missing(t, "RabbitMQ and the SQS emulator", fmt.Errorf("rabbit %v, sqs %v", env.rabbit, env.sqs))
	}
	ctx := ctxFor(t, 3*time.Minute)
	ns := "e2e-from-crossplane"
	ensureNamespace(t, ctx, ns, true)
	rabbitActor, sqsActor := "ingest", "summarize-"+env.runID
	const messages = 3

	rabbit := testenv.Rabbit(t)
	rabbitQueue := "asya-" + ns + "-" + rabbitActor
	withChannel(t, func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare("asya", "topic", true, false, false, false, nil); err != nil {
			return err
		}
		if _, err := ch.QueueDeclare(rabbitQueue, true, false, false, false, nil); err != nil {
			return err
		}
		return ch.QueueBind(rabbitQueue, rabbitActor, "asya", false, nil)
	})
	t.Cleanup(func() { testenv.DeleteQueue(t, rabbit, rabbitQueue) })
	for i := 0; i < messages; i++ {
		testenv.Publish(t, rabbit, rabbitQueue)
	}
	sqsQueue := "asya-" + ns + "-" + sqsActor
	created, err := sqsClient().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(sqsQueue),
		Attributes: map[string]string{"VisibilityTimeout": "30"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < messages; i++ {
		if _, err := sqsClient().SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String(`{"n":` + strconv.Itoa(i) + `}`)}); err != nil {
			t.Fatal(err)
		}
	}

	// Step 7: the saved actors, as step 2 writes them.
	saved := filepath.Join(t.TempDir(), "actors.yaml")
	manifest := fmt.Sprintf(`apiVersion: asya.sh/v1alpha1
kind: AsyncActor
metadata: {name: %[2]s, namespace: %[1]s}
spec: {actor: %[2]s, image: python:3.12-slim, handler: ingest.run, scaling: {enabled: false}, replicas: 1}
---
apiVersion: asya.sh/v1alpha1
kind: AsyncActor
metadata: {name: summarize, namespace: %[1]s}
spec: {actor: %[3]s, transport: sqs, image: python:3.12-slim, handler: summarize.run, scaling: {enabled: false}, replicas: 1}
`, ns, rabbitActor, sqsActor)
	if err := os.WriteFile(saved, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", saved)
	for _, name := range []string{rabbitActor, "summarize"} {
		converge(t, ctx, ns, name)
		if _, ok := childrenOf(t, ctx, ns, name)["Deployment/"+name]; !ok {
			t.Errorf("%s: no Deployment; status %s", name, mustJSON(getActor(t, ctx, ns, name)["status"]))
		}
	}
	if got := str(getActor(t, ctx, ns, rabbitActor), "status", "queueIdentifier"); got != rabbitQueue {
		t.Errorf("status.queueIdentifier %q, want %q", got, rabbitQueue)
	}
	wantMessages(t, rabbit, rabbitQueue, messages, "after re-applying the actor")
	attrs, err := sqsClient().GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: created.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	// As upstream's status: the SQS queue by its ARN, the one the emulator
	// reports, and its URL.
	st := getActor(t, ctx, ns, "summarize")["status"].(obj)
	if got, want := str(st, "queueIdentifier"), attrs.Attributes[string(types.QueueAttributeNameQueueArn)]; got != want {
		t.Errorf("status.queueIdentifier %q, want the queue's ARN %q", got, want)
	}
	if got := str(st, "queueUrl"); got != aws.ToString(created.QueueUrl) {
		t.Errorf("status.queueUrl %q, want %q", got, aws.ToString(created.QueueUrl))
	}
	if n := attrs.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)]; n != strconv.Itoa(messages) {
		t.Errorf("%s holds %s messages after re-applying the actor, want %d", sqsQueue, n, messages)
	}
	deleteAndFinalize(t, ctx, ns, "summarize")
	deleteAndFinalize(t, ctx, ns, rabbitActor)
}
