package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asya-sh/asya-sync/transport"
)

// Calls beyond the limit wait, and are admitted in the order they came.
func TestAdmissionIsFirstComeFirstServed(t *testing.T) {
	a := newAdmission(1)
	release := make(chan struct{})
	var mu sync.Mutex
	var order []int
	run := func(i int) hookFunc {
		return a.limit(func(context.Context, []byte) (outcome, error) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if i == 0 {
				<-release
			}
			return outcome{}, nil
		})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = run(0)(context.Background(), nil) }()
	waitFor(t, func() bool { return len(a.slots) == 1 })
	for i := 1; i <= 5; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = run(i)(context.Background(), nil) }()
		// Each waiter blocks before the next one comes.
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("admitted in order %v, want 0 to 5", order)
		}
	}
}

// A call whose caller gives up while it waits is not run.
func TestAdmissionGivesUpWithTheCaller(t *testing.T) {
	a := newAdmission(1)
	a.slots <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	ran := false
	_, err := a.limit(func(context.Context, []byte) (outcome, error) { ran = true; return outcome{}, nil })(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("err %v, ran %v: want the deadline and no run", err, ran)
	}
}

// A sync waiting for a broker lets the next sync compute meanwhile, and
// takes a turn again afterwards; a cached answer keeps the turn.
func TestBrokerWaitGivesTheTurnAway(t *testing.T) {
	a := newAdmission(1)
	broker := &slowBroker{waiting: make(chan struct{}), answer: make(chan struct{})}
	brokers := yieldingBrokers{lookupOf{broker}}
	first := make(chan error)
	go func() {
		_, err := a.limit(func(ctx context.Context, _ []byte) (outcome, error) {
			b, _ := brokers.Get("mq")
			if err := b.Ensure(ctx, transport.Queue{}); err != nil { // cached: keeps the turn
				return outcome{}, err
			}
			broker.slow = true
			_, err := b.Counts(ctx, transport.Queue{})
			if len(a.slots) != 1 {
				t.Error("sync computes after the broker call without a turn")
			}
			return outcome{}, err
		})(context.Background(), nil)
		first <- err
	}()
	// The second sync runs while the first waits for the broker.
	<-broker.waiting
	_, err := a.limit(func(context.Context, []byte) (outcome, error) {
		close(broker.answer)
		return outcome{}, nil
	})(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.slots) == 0 })
}

type lookupOf struct{ transport.Broker }

func (l lookupOf) Get(string) (transport.Broker, bool) { return l.Broker, true }

// slowBroker answers at once until slow is set; then it closes waiting and
// answers when answer closes.
type slowBroker struct {
	transport.Broker
	slow            bool
	waiting, answer chan struct{}
}

func (b *slowBroker) Ensure(context.Context, transport.Queue) error { return b.wait() }

func (b *slowBroker) Counts(context.Context, transport.Queue) (transport.Counts, error) {
	return transport.Counts{}, b.wait()
}

func (b *slowBroker) wait() error {
	if b.slow {
		close(b.waiting)
		<-b.answer
	}
	return nil
}
