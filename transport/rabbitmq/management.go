package rabbitmq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/asya-sh/asya-sync/transport"
)

// managementQueue is the part of GET /api/queues/{vhost}/{name} we read.
// The broker leaves the counts out until it has collected statistics for
// a new queue, hence the pointers.
type managementQueue struct {
	Ready   *int64 `json:"messages_ready"`
	Unacked *int64 `json:"messages_unacknowledged"`
}

// managementCounts reads a queue's counts from the management HTTP API,
// with the service's own credentials.
func (r *Broker) managementCounts(ctx context.Context, queue string) (transport.Counts, error) {
	code, body, err := r.management(ctx, http.MethodGet, "/api/queues/"+url.PathEscape(r.cfg.VHost)+"/"+url.PathEscape(queue), nil)
	switch {
	case err != nil:
		return transport.Counts{}, err
	case code == http.StatusNotFound:
		return transport.Counts{}, &transport.Error{Reason: transport.ReasonQueueNotFound, Message: fmt.Sprintf("queue %s does not exist on %s", queue, r.address())}
	case code != http.StatusOK:
		return transport.Counts{}, r.managementRefused(code, body)
	}
	var q managementQueue
	if err := json.Unmarshal(body, &q); err != nil {
		return transport.Counts{}, &transport.Error{Reason: transport.ReasonQueueError, Message: "RabbitMQ management API at " + r.cfg.ManagementURL, Err: err}
	}
	return transport.Counts{Queued: q.Ready, Processing: q.Unacked}, nil
}

// policy is a RabbitMQ policy as PUT /api/policies/{vhost}/{name} takes it.
type policy struct {
	Pattern    string            `json:"pattern"`
	Definition map[string]string `json:"definition"`
	Priority   int               `json:"priority"`
	ApplyTo    string            `json:"apply-to"`
}

// unroutablePolicy gives exchange, and no other object, its alternate
// exchange.
func unroutablePolicy(exchange string) policy {
	return policy{Pattern: "^" + regexp.QuoteMeta(exchange) + "$", Definition: map[string]string{"alternate-exchange": alternateExchange(exchange)},
		Priority: UnroutablePolicyPriority, ApplyTo: "exchanges"}
}

// setUnroutablePolicy writes the policy that gives exchange its alternate
// exchange (a PUT of the same policy changes nothing), then checks that it
// is the one the exchange follows: another policy of a higher priority
// that matches the exchange replaces it, and the exchange then drops what
// it cannot route unless that policy names an alternate exchange too.
func (r *Broker) setUnroutablePolicy(ctx context.Context, exchange string) error {
	name, want := alternateExchange(exchange), unroutablePolicy(exchange)
	body, err := json.Marshal(want)
	if err != nil {
		return err
	}
	code, answer, err := r.management(ctx, http.MethodPut, "/api/policies/"+url.PathEscape(r.cfg.VHost)+"/"+url.PathEscape(name), body)
	switch {
	case err != nil:
		return err
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return &transport.Error{Reason: transport.ReasonQueueError, Message: fmt.Sprintf(
			"RabbitMQ management API at %s refused user %s the policy %s (%d): policies need the user tag policymaker (or administrator)",
			r.cfg.ManagementURL, r.cfg.Username, name, code)}
	case code != http.StatusCreated && code != http.StatusNoContent:
		return r.managementRefused(code, answer)
	}
	return r.checkFollowed(ctx, exchange, name)
}

// managementExchange is the part of GET /api/exchanges/{vhost}/{name} we
// read: the policy the exchange follows, if any.
type managementExchange struct {
	Policy string `json:"policy"`
}

// checkFollowed reports an exchange that follows another policy than
// name. An exchange not declared yet follows its policy once it is.
func (r *Broker) checkFollowed(ctx context.Context, exchange, name string) error {
	code, body, err := r.management(ctx, http.MethodGet, "/api/exchanges/"+url.PathEscape(r.cfg.VHost)+"/"+url.PathEscape(exchange), nil)
	switch {
	case err != nil:
		return err
	case code == http.StatusNotFound:
		return nil
	case code != http.StatusOK:
		return r.managementRefused(code, body)
	}
	var x managementExchange
	if err := json.Unmarshal(body, &x); err != nil {
		return &transport.Error{Reason: transport.ReasonQueueError, Message: "RabbitMQ management API at " + r.cfg.ManagementURL, Err: err}
	}
	if x.Policy != "" && x.Policy != name {
		return &transport.Error{Reason: transport.ReasonQueueConflict, Message: fmt.Sprintf(
			"exchange %s on %s follows policy %s, of a higher priority than asya-sync's %s (%d): what it routes to no queue goes where %s says; "+
				"give %s the key alternate-exchange: %s, or lower its priority below %d",
			exchange, r.address(), x.Policy, name, UnroutablePolicyPriority, x.Policy, x.Policy, name, UnroutablePolicyPriority)}
	}
	return nil
}

// management makes one call of the management HTTP API with the
// service's own credentials, and returns the status code and body.
func (r *Broker) management(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(r.cfg.ManagementURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, &transport.Error{Reason: transport.ReasonQueueError, Message: "managementURL", Err: err}
	}
	password, err := r.password()
	if err != nil {
		return 0, nil, r.managementUnavailable(err)
	}
	req.SetBasicAuth(r.cfg.Username, password)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, nil, r.managementUnavailable(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, r.managementUnavailable(err)
	}
	return resp.StatusCode, answer, nil
}

func (r *Broker) managementRefused(code int, body []byte) *transport.Error {
	return &transport.Error{Reason: transport.ReasonQueueError, Message: fmt.Sprintf(
		"RabbitMQ management API at %s answered %d %s: %.200s", r.cfg.ManagementURL, code, http.StatusText(code), body)}
}

func (r *Broker) managementUnavailable(err error) *transport.Error {
	return &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: "RabbitMQ management API at " + r.cfg.ManagementURL, Err: err}
}
