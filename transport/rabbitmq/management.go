package rabbitmq

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	endpoint := strings.TrimRight(r.cfg.ManagementURL, "/") + "/api/queues/" +
		url.PathEscape(r.cfg.VHost) + "/" + url.PathEscape(queue)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return transport.Counts{}, &transport.Error{Reason: transport.ReasonQueueError, Message: "managementURL", Err: err}
	}
	password, err := r.password()
	if err != nil {
		return transport.Counts{}, r.managementUnavailable(err)
	}
	req.SetBasicAuth(r.cfg.Username, password)
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return transport.Counts{}, r.managementUnavailable(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return transport.Counts{}, r.managementUnavailable(err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return transport.Counts{}, &transport.Error{Reason: transport.ReasonQueueNotFound, Message: fmt.Sprintf("queue %s does not exist on %s", queue, r.address())}
	case resp.StatusCode != http.StatusOK:
		return transport.Counts{}, &transport.Error{Reason: transport.ReasonQueueError, Message: fmt.Sprintf(
			"RabbitMQ management API at %s answered %s: %.200s", r.cfg.ManagementURL, resp.Status, body)}
	}
	var q managementQueue
	if err := json.Unmarshal(body, &q); err != nil {
		return transport.Counts{}, &transport.Error{Reason: transport.ReasonQueueError, Message: "RabbitMQ management API at " + r.cfg.ManagementURL, Err: err}
	}
	return transport.Counts{Queued: q.Ready, Processing: q.Unacked}, nil
}

func (r *Broker) managementUnavailable(err error) *transport.Error {
	return &transport.Error{Reason: transport.ReasonBrokerUnavailable, Message: "RabbitMQ management API at " + r.cfg.ManagementURL, Err: err}
}
