package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
	"github.com/asya-sh/asya-sync/transport/rabbitmq"
)

// TestRollbackDeletesTheRecordsThatGoWithTheirQueues runs the commands of
// docs/upgrade.md#rolling-back with the real rabbitmqctl and curl against
// the test broker (kubectl and helm recorded): they delete the records
// that go with their queues, which an older release would read as
// another claim's, and leave the queues with their messages and the
// standalone records. rabbitmqctl shows the commands only this test's
// exchanges, so that no other test's records are touched.
func TestRollbackDeletesTheRecordsThatGoWithTheirQueues(t *testing.T) {
	testenv.NeedRabbitManagement(t)
	rabbitmqctl, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		testenv.Missing(t, "rabbitmqctl, to run docs/upgrade.md's commands", err)
		return
	}
	uri, err := amqp.ParseURI(testenv.RabbitURL())
	if err != nil {
		t.Fatal(err)
	}
	broker := rabbitmq.New("rollback-test", rabbitmq.Settings{Host: uri.Host, Port: uri.Port, VHost: uri.Vhost,
		Username: uri.Username, Exchange: "asya-rollback-test"}, nil)
	t.Cleanup(func() { broker.Close() })
	bound := transport.Queue{Actor: testenv.ActorName("rollback")}
	standalone := bound.Name() + "-standalone"
	conn := testenv.Rabbit(t)
	t.Cleanup(func() {
		testenv.DeleteQueue(t, conn, bound.Name())
		testenv.DeleteQueue(t, conn, standalone)
	})
	if err := broker.Ensure(testenv.Context(t), bound); err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	olderRecord := func(queue, claim string) error { // as releases before declare one
		c, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ExchangeDeclare(rabbitmq.OwnerRecord(queue), amqp.ExchangeFanout, true, false, true, false,
			amqp.Table{"alternate-exchange": claim})
	}
	if err := olderRecord(standalone, "older"); err != nil {
		t.Fatal(err)
	}
	if err := olderRecord(bound.Name(), bound.Claim()); err == nil {
		t.Fatal("an older release's declare of the record Ensure made succeeds: nothing to roll back")
	}

	only := t.TempDir()
	wrapper := "#!/usr/bin/env bash\n" + rabbitmqctl + " \"$@\" | grep -F -- '" + bound.Name() + "'\n"
	if err := os.WriteFile(filepath.Join(only, "rabbitmqctl"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", only+string(os.PathListSeparator)+os.Getenv("PATH"))
	block := fencedAfter(t, "docs/upgrade.md", "## Rolling back", "sh")
	calls, _ := runRecorded(t, block, []string{"kubectl", "helm"}, "RABBITMQ_API="+testenv.RabbitManagementURL(),
		"RABBITMQ_USER="+uri.Username, "RABBITMQ_PASSWORD="+uri.Password)
	if len(calls) != 2 || !slices.Contains(calls[0], "--replicas") || calls[1][0] != "helm" {
		t.Errorf("the commands stop the service, then roll back: ran %v", calls)
	}

	if err := olderRecord(bound.Name(), bound.Claim()); err != nil {
		t.Errorf("after the commands, an older release still cannot record %s: %v", bound.Name(), err)
	}
	if _, err := ch.QueueDeclarePassive(bound.Name(), true, false, false, false, nil); err != nil {
		t.Errorf("the commands deleted the queue %s: %v", bound.Name(), err)
	}
	if err := ch.ExchangeDeclarePassive(rabbitmq.OwnerRecord(standalone), amqp.ExchangeFanout, true, false, true, false, nil); err != nil {
		t.Errorf("the commands deleted the standalone record of %s: %v", standalone, err)
	}
}
