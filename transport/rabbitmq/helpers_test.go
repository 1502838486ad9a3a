package rabbitmq

import (
	"context"
	"os"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	_ "github.com/asya-sh/asya-sync/internal/golden" // accepts -update like every test package
	"github.com/asya-sh/asya-sync/internal/testenv"
	"github.com/asya-sh/asya-sync/transport"
)

// testExchange is shared by the run's tests and deleted after.
var testExchange = "asya-test-" + testenv.RunID

func TestMain(m *testing.M) {
	code := m.Run()
	deleteTestExchange()
	os.Exit(code)
}

// testSettings is a transport configuration for the test broker, with the
// password in a file as in production.
func testSettings(t testing.TB, change ...func(*Settings)) Settings {
	t.Helper()
	login := testenv.NewRabbitLogin(t)
	cfg := Settings{
		Host: login.Host, Port: login.Port, VHost: login.VHost, Username: login.Username,
		PasswordFile: login.PasswordFile, Exchange: testExchange,
		Queues: transport.Queues{DLQ: transport.DLQ{MaxRetryCount: 3}},
	}
	for _, c := range change {
		c(&cfg)
	}
	return cfg
}

func withDLQ(c *Settings)        { c.Queues.DLQ.Enabled = true }
func withManagement(c *Settings) { c.ManagementURL = testenv.RabbitManagementURL() }
func withoutAutoCreate(c *Settings) {
	off := false
	c.Queues.AutoCreate = &off
}

// newBroker opens a broker closed at the end of the test.
func newBroker(t testing.TB, change ...func(*Settings)) *Broker {
	t.Helper()
	testenv.NeedRabbitMQ(t)
	r := New("test-"+testenv.ActorName("conn"), testSettings(t, change...), nil)
	t.Cleanup(func() { r.Close() })
	return r
}

// amqpChannel is a channel of the test's own, to act on the broker by hand.
func amqpChannel(t testing.TB) *amqp.Channel {
	t.Helper()
	ch, err := testenv.Rabbit(t).Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// queueExists checks by passive declare, on a channel of its own because
// a missing queue closes the channel.
func queueExists(t *testing.T, queue string) (messages int, exists bool) {
	t.Helper()
	ch := amqpChannel(t)
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if isAMQPCode(err, amqp.NotFound) {
		return 0, false
	}
	if err != nil {
		t.Fatalf("passive declare %s: %v", queue, err)
	}
	return q.Messages, true
}

// recordExists checks the queue's owner record by passive declare, on a
// channel of its own likewise.
func recordExists(t *testing.T, queue string) bool {
	t.Helper()
	ch := amqpChannel(t)
	defer ch.Close()
	err := ch.ExchangeDeclarePassive(OwnerRecord(queue), amqp.ExchangeFanout, true, false, true, false, nil)
	if isAMQPCode(err, amqp.NotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("passive declare %s: %v", OwnerRecord(queue), err)
	}
	return true
}

// cleanupRabbitQueues deletes the actors' queues at the end of the test.
// ensuredActor names an actor for the test, ensures its queue through r
// and deletes its queues at the end of the test.
func ensuredActor(t *testing.T, ctx context.Context, r *Broker, prefix string) string {
	t.Helper()
	actor := testenv.ActorName(prefix)
	cleanupRabbitQueues(t, actor)
	if err := r.Ensure(ctx, transport.Queue{Actor: actor}); err != nil {
		t.Fatal(err)
	}
	return actor
}

func cleanupRabbitQueues(t *testing.T, actors ...string) {
	var queues []string
	for _, actor := range actors {
		q := transport.Queue{Actor: actor}
		queues = append(queues, q.Name(), q.DLQName())
	}
	t.Cleanup(func() { deleteQueuesAndRecords(queues) })
}

// deleteQueuesAndRecords deletes the queues and their owner records, as
// far as the broker lets it: a test's cleanup.
func deleteQueuesAndRecords(queues []string) {
	conn, err := amqp.Dial(testenv.RabbitURL())
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	for _, q := range queues {
		ch.QueueDelete(q, false, false, false)
		ch.ExchangeDelete(OwnerRecord(q), false, false)
	}
}

func deleteTestExchange() {
	conn, err := amqp.Dial(testenv.RabbitURL())
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		ch.ExchangeDelete(testExchange, false, false)
	}
	// The catch of the test exchange, but not asya.unroutable, which every
	// transport exchange on the broker shares.
	removeCatch(testExchange, "")
}
